package main

import (
	"bytes"
	"errors"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/spf13/cobra"
	"io"
	"strings"
)

func newLintCmd(inv *invocation) *cobra.Command {
	var (
		source sourceFlags
		src    srcRegistryFlags
		tls    tlsFlags
		retry  retryFlags
		l      lintFlags
		o      pipeline.LintOptions
	)
	cmd := &cobra.Command{
		Use:   "lint [PATH...]",
		Short: "Lint package manifests, their bundle images and the repo (violet lint)",
		Long: `lint checks every PackageManifest of the package repo (or the files and
directories given, relative to --source), the bundle image each names, and the
repo-wide rules, and prints the findings: text (violet-like, then "lint ok" or
"lint failed"), json, sarif (SARIF 2.1.0 for GitHub code scanning) or github
(workflow annotations). Rules and fixes: docs/lint-rules.md. Severities and
waivers come from publish.yaml. Exit 1 when a finding is an error.

lint renders nothing: it takes no cluster, target, namespace or library.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := l.check(); err != nil {
				return err
			}
			if err := source.check(false, ""); err != nil {
				return err
			}
			if inv.ci != nil {
				if pr, target := inv.ci.PullRequest(); pr {
					// Where credentials go is the base's to say.
					if err := inv.pullRequestTrust(cmd.Context(), cmd.Flags(), &source, &src, "", target, true); err != nil {
						return err
					}
				}
			}
			reg := registryFlags{src: &src, tls: &tls, retry: &retry}
			if err := reg.apply(&o.Mirror); err != nil {
				return err
			}
			o.Mirror.Flags = registry.SourceFlags // named in its registry errors
			o.Source, o.PackagesDir, o.Paths = source.source, source.packagesDir, args
			o.Offline, o.Images, o.LintCache = l.offline, !l.noImage, l.lintCache
			o.Log = inv.log
			o.Lint = inv.lintConfig()
			o.Verify = inv.imageVerifier()
			fs, err := pipeline.Lint(cmd.Context(), o)
			var rf *pipeline.RegistryFailure
			if err != nil && !errors.As(err, &rf) {
				return err
			}
			if rf != nil && l.format == "text" {
				// Not everything was checked: no "lint ok" before the
				// registry's error.
				var b bytes.Buffer
				if err := lint.Format(&b, fs, l.format); err != nil {
					return err
				}
				io.WriteString(cmd.OutOrStdout(), strings.TrimSuffix(b.String(), "lint ok\n"))
			} else if err := lint.Format(cmd.OutOrStdout(), fs, l.format); err != nil {
				return err
			}
			// In CI, text output also gets annotations (GitHub) or a Code
			// Quality report (GitLab); machine formats stay alone on stdout.
			if l.format == "text" && inv.inCI() {
				inv.ci.Annotate(fs)
			}
			if rf != nil {
				return rf // exit 2, after the findings of what could be read
			}
			if n := lint.Summarize(fs).Errors; n > 0 {
				return &pipeline.InputError{Err: &planFindingsError{n: n}}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	source.register(fs)
	l.register(fs)
	src.register(fs)
	src.registerMirrors(fs)
	tls.register(fs)
	retry.register(fs)
	withEnvHelp(fs)
	return cmd
}
