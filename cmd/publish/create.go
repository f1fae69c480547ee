package main

import (
	"fmt"

	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/spf13/cobra"
)

func newCreateCmd() *cobra.Command {
	var (
		o     pipeline.CreateOptions
		plain bool
	)
	cmd := &cobra.Command{
		Use:   "create DIR --artifact REF",
		Short: "Write a PackageManifest for a bundle image into DIR/manifest.yaml (violet create)",
		Long: `create reads the bundle image REF and writes DIR/manifest.yaml: a complete
PackageManifest with metadata.name <package>.v<version>, spec.version from the
CSV, spec.info (displayName, description, icon, keywords, links) from the CSV,
spec.relatedImages (every image the CSV deploys) and spec.arch (the platforms
of the bundle's image index, or --platforms). It passes publish lint. An
existing manifest.yaml is kept unless --force.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applyEnv(cmd.Flags()); err != nil {
				return err
			}
			if o.Artifact == "" {
				return &usageError{fmt.Errorf("--artifact REF is required (the bundle image)")}
			}
			o.Dir, o.Mirror.PlainHTTP = args[0], plain
			o.Mirror.Flags = registry.SourceFlags // named in its registry errors
			path, err := pipeline.Create(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created   %s\n", path)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Artifact, "artifact", "", "bundle image reference")
	fs.StringSliceVar(&o.Platforms, "platforms", nil, "spec.arch (default: the platforms of the bundle's image index)")
	fs.BoolVar(&o.Force, "force", false, "overwrite DIR/manifest.yaml")
	fs.StringVar(&o.Mirror.Src.Username, "src-username", "", "registry user name (default: docker config)")
	fs.StringVar(&o.Mirror.Src.Password, "src-password", "", "registry password or token")
	fs.StringVar(&o.Mirror.CAFile, "ca-file", "", "PEM file of extra CA certificates to trust")
	fs.BoolVar(&plain, "plain-http", false, "use plain HTTP for the registry")
	fs.BoolVar(&plain, "plain", false, "alias of --plain-http (violet)")
	withEnvHelp(fs)
	return cmd
}
