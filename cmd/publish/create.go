package main

import (
	"errors"
	"fmt"

	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/scaffold"
	"github.com/spf13/cobra"
)

func newCreateCmd(inv *invocation) *cobra.Command {
	var (
		o      scaffold.Options
		source sourceFlags
		src    srcRegistryFlags
		tls    tlsFlags
		retry  retryFlags
	)
	cmd := &cobra.Command{
		Use:   "create DIR --artifact REF",
		Short: "Write a PackageManifest for a bundle image or a Helm chart into DIR/manifest.yaml (violet create)",
		Long: `create reads the bundle image REF and writes DIR/manifest.yaml: a complete
PackageManifest with metadata.name <package>.v<version>, spec.version from the
CSV, spec.info (displayName, description, icon, keywords, links) from the CSV,
spec.relatedImages (every image the CSV deploys) and spec.arch (the platforms
of the bundle's image index, or --platforms). It passes publish lint's
manifest rules: a value of the CSV they would refuse (an icon over 192 KiB, a
description over 128 KiB, a link without name or absolute URL) is left out,
with a warning naming the field and the rule. An existing manifest.yaml is
kept unless --force.

A Helm chart is given as --artifact oci://HOST/REPO/NAME:VERSION, or as a
chart repository URL with --chart NAME --version VERSION: the manifest is of
spec.type chart, with the chart's name and version from Chart.yaml and
spec.relatedImages every image the chart renders with its own values or lists
in its image annotations (docs/charts.md).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Artifact == "" {
				return usagef("--artifact REF is required (the bundle image, or the chart)")
			}
			reg := registryFlags{src: &src, tls: &tls, retry: &retry}
			if err := reg.apply(&o.Mirror); err != nil {
				return err
			}
			o.Mirror.Flags = registry.SourceFlags // named in its registry errors
			o.Dir = args[0]
			o.Note = func(n string) { inv.warnf("%s", n) }
			path, err := scaffold.Create(cmd.Context(), o)
			if err != nil {
				var ie *scaffold.InputError
				if errors.As(err, &ie) {
					return &pipeline.InputError{Err: err} // exit 1
				}
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created   %s\n", path)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Artifact, "artifact", "", "bundle image reference, or a chart: oci://HOST/REPO/NAME:VERSION or a chart repository URL")
	fs.StringVar(&o.Chart, "chart", "", "the chart's name in the chart repository --artifact names")
	fs.StringVar(&o.Version, "version", "", "the chart version to read from the chart repository --artifact names")
	fs.StringSliceVar(&o.Platforms, "platforms", nil, "spec.arch (default: the platforms of the bundle's image index)")
	fs.BoolVar(&o.Force, "force", false, "overwrite DIR/manifest.yaml")
	source.registerConfig(fs)
	src.register(fs)
	tls.register(fs)
	retry.register(fs)
	withEnvHelp(fs)
	return cmd
}
