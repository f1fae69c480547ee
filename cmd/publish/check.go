package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/check"
	"github.com/operator-publish/publish/internal/ci"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/logging"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/spf13/cobra"
)

// checkFindingsError is returned when the catalog check found problems
// (exit 1); they were already printed and annotated.
type checkFindingsError struct{ n int }

func (e *checkFindingsError) Error() string {
	return "check failed: " + lint.Count(e.n, "problem") + " in the catalog (see the findings above)"
}

func newCheckCmd(inv *invocation) *cobra.Command {
	var (
		source     sourceFlags
		r          renderFlags
		o          check.Options
		noFetch    bool
		catalogDir string
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Review the catalog repo itself: rendered/ is what the overlays render, every object passes its CRD, and what a change does on each cluster",
		Long: `check runs in the catalog repo's own CI (its pull requests): for every cluster
(--cluster, else the clusters publish.yaml declares, else every directory of
kustomize/clusters/ that has a rendered/<cluster>) it builds the overlay
kustomize/clusters/<cluster> from publish/generated, in process, and reports
every file of rendered/<cluster> that differs from that render: changed by
hand, missing, or extra, or an overlay that does not build. Every rendered
Artifact, ArtifactVersion and Library is validated against the CRDs built into
the binary. A cluster that the catalog state (publish/state/) records as rendered by the olm
target is not checked (its CatalogSource names a catalog image only a run
builds), and says so.

It then compares rendered/ of the checkout with a base commit and prints what
the change does on each cluster: artifacts and versions listed, delisted,
relisted or removed, and the fields changed. The base is --base; in a pull
request (GitHub Actions pull_request events, GitLab merge request pipelines,
or --target-branch) the merge base with the target branch; else HEAD's parent.

Findings are annotated at their files (GitHub workflow commands, the GitLab
Code Quality report) and the report is the job summary. Nothing is written.
Exit 1 when there is a problem, 0 on a clean catalog.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.CatalogDir, o.Fetch, o.Getenv = catalogDir, !noFetch, inv.getenv
			if r.cluster != "" {
				if strings.ContainsAny(r.cluster, `/\`) || r.cluster == "." || r.cluster == ".." {
					return usagef("--cluster %q: want a plain overlay name such as global (kustomize/clusters/<name>)", r.cluster)
				}
				o.Clusters = []string{r.cluster}
			} else if inv.config != nil && len(inv.config.Clusters) > 0 {
				for n := range inv.config.Clusters {
					o.Clusters = append(o.Clusters, n)
				}
				sort.Strings(o.Clusters)
			}
			if o.TargetBranch != "" {
				o.PR = true
			} else if inv.ci != nil {
				if pr, target := inv.ci.PullRequest(); pr {
					o.PR, o.TargetBranch = true, target
				}
			}
			o.Log = inv.logWriter()
			rep, err := check.Run(cmd.Context(), o)
			var fe *check.FlagError
			if errors.As(err, &fe) {
				return &usageError{err}
			}
			if err != nil {
				return err
			}
			// rep.Warnings went to the log already (o.Log).
			out := cmd.OutOrStdout()
			for _, f := range rep.Findings {
				fmt.Fprintln(out, logging.Clean(ci.FormatFinding(f)))
			}
			if len(rep.Findings) > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprint(out, logging.Clean(rep.Text()))
			if inv.inCI() {
				inv.ci.Annotate(rep.Findings)
				if err := inv.ci.Summary(rep.Markdown()); err != nil {
					inv.warnf("CI summary: %v", err)
				}
			}
			if n := rep.Errors(); n > 0 {
				return &pipeline.InputError{Err: &checkFindingsError{n: n}}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	source.registerConfig(fs)
	r.registerCluster(fs, "", "check only this cluster: kustomize/clusters/<cluster> against rendered/<cluster> (default: the clusters of publish.yaml, else every overlay with a rendered/<cluster>)")
	fs.StringVar(&catalogDir, "catalog-dir", ".", "the catalog checkout (its root, or the directory the catalog lives in below the repo root); read only")
	fs.StringVar(&o.Base, "base", "", "compare the rendered objects with this revision of the catalog repo (default: the merge base with the target branch in a pull request, else HEAD's parent)")
	fs.StringVar(&o.TargetBranch, "target-branch", "", "pull-request mode against this branch (default: from the CI: GITHUB_BASE_REF, CI_MERGE_REQUEST_TARGET_BRANCH_NAME)")
	fs.BoolVar(&noFetch, "no-fetch", false, "never fetch from the catalog repo's origin to find the base in a shallow clone")
	withEnvHelp(fs)
	return cmd
}
