package main

import (
	"fmt"

	"github.com/operator-publish/publish/internal/ci"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/spf13/cobra"
)

func newLintCmd() *cobra.Command {
	var (
		c       commonFlags
		o       pipeline.LintOptions
		format  string
		caFile  string
		noImage bool
	)
	cmd := &cobra.Command{
		Use:   "lint [PATH...]",
		Short: "Lint package manifests, their bundle images and the repo (violet lint)",
		Long: `lint checks every PackageManifest of the package repo (or the files and
directories given, relative to --source), the bundle image each names, and the
repo-wide rules, and prints the findings: text (violet-like, then "lint ok" or
"lint failed"), json, sarif (SARIF 2.1.0 for GitHub code scanning) or github
(workflow annotations). Rules and fixes: docs/lint-rules.md. Severities and
waivers come from publish.yaml. Exit 1 when a finding is an error.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applyEnv(cmd.Flags()); err != nil {
				return err
			}
			if err := c.check(); err != nil {
				return err
			}
			switch format {
			case "text", "json", "sarif", "github":
			default:
				return &usageError{fmt.Errorf("--format %q: want text, json, sarif or github", format)}
			}
			o.Source, o.PackagesDir, o.Paths = c.source, c.packagesDir, args
			o.Mirror.PlainHTTP, o.Mirror.CAFile = c.plainHTTP, caFile
			o.Mirror.Flags = registry.SourceFlags // named in its registry errors
			o.Images = !noImage
			if loadedConfig != nil {
				o.Lint = loadedConfig.Lint
			}
			fs, err := pipeline.Lint(cmd.Context(), o)
			if err != nil {
				return err
			}
			if err := lint.Format(cmd.OutOrStdout(), fs, format); err != nil {
				return err
			}
			// In CI, text output also gets annotations (GitHub) or a Code
			// Quality report (GitLab); machine formats stay alone on stdout.
			if ciEnv != nil && format == "text" && ciEnv.Name() != ci.None {
				ciEnv.Annotate(fs)
			}
			if n := lint.Summarize(fs).Errors; n > 0 {
				return &pipeline.InputError{Err: &planFindingsError{n: n}}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	c.register(fs)
	fs.StringVar(&format, "format", "text", "text, json, sarif or github")
	fs.BoolVar(&o.Offline, "offline", false, "do not read bundle images: manifest and repo rules only")
	fs.BoolVar(&noImage, "no-image-check", false, "do not check that related images exist in the source registry")
	fs.StringVar(&o.Mirror.Src.Username, "src-username", "", "source registry user name (default: docker config)")
	fs.StringVar(&o.Mirror.Src.Password, "src-password", "", "source registry password or token")
	fs.StringVar(&caFile, "ca-file", "", "PEM file of extra CA certificates to trust")
	withEnvHelp(fs)
	return cmd
}
