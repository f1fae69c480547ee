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
	"github.com/operator-publish/publish/internal/mirror"
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
		images     bool
		format     string
		dst        dstRegistryFlags
		tls        tlsFlags
		retry      retryFlags
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
Exit 1 when there is a problem, 0 on a clean catalog. Clusters that were not
re-rendered are named in the verdict and a warning; when no cluster at all was
re-rendered (and, with --registry, no image checked), check says nothing was
checked and exits 1, never "check ok".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch format {
			case "text", "json", "sarif":
			default:
				return usagef("--format %q: want text, json or sarif", format)
			}
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
			var mc *mirror.Client
			if images {
				var err error
				if mc, err = checkClient(registryFlags{dst: &dst, tls: &tls, retry: &retry}); err != nil {
					return err
				}
			}
			rep, err := check.Run(cmd.Context(), o)
			var fe *check.FlagError
			if errors.As(err, &fe) {
				return &usageError{err}
			}
			if err != nil {
				return err
			}
			var images *check.RegistryReport
			if mc != nil {
				if images, err = check.Registry(cmd.Context(), check.RegistryOptions{
					CatalogDir: catalogDir, Clusters: o.Clusters, Parse: mc.ParseReference, Remote: mc.DstOptions(),
				}); err != nil {
					return err
				}
				rep.Findings = append(rep.Findings, images.Findings...)
			}
			// rep.Warnings went to the log already (o.Log).
			return printCheck(cmd, inv, rep, images, format)
		},
	}
	fs := cmd.Flags()
	source.registerConfig(fs)
	r.registerCluster(fs, "", "check only this cluster: kustomize/clusters/<cluster> against rendered/<cluster> (default: the clusters of publish.yaml, else every overlay with a rendered/<cluster>)")
	fs.StringVar(&catalogDir, "catalog-dir", ".", "the catalog checkout (its root, or the directory the catalog lives in below the repo root); read only")
	fs.StringVar(&o.Base, "base", "", "compare the rendered objects with this revision of the catalog repo (default: the merge base with the target branch in a pull request, else HEAD's parent)")
	fs.StringVar(&o.TargetBranch, "target-branch", "", "pull-request mode against this branch (default: from the CI: GITHUB_BASE_REF, CI_MERGE_REQUEST_TARGET_BRANCH_NAME)")
	fs.BoolVar(&noFetch, "no-fetch", false, "never fetch from the catalog repo's origin to find the base in a shallow clone")
	fs.StringVar(&format, "format", "text", "text (the report), json or sarif (SARIF 2.1.0 for GitHub code scanning): the findings, as lint prints them")
	fs.BoolVar(&images, "registry", false, "also check that every image of every listed version is at its cluster's destination registry, as the catalog state records it (one HEAD each; for a schedule); the credentials go only to --dst-registry's host")
	dst.register(fs, "read access, with --registry")
	tls.register(fs)
	retry.register(fs)
	withEnvHelp(fs)
	return cmd
}

// checkClient is the registry client of check --registry, from its
// destination, TLS and retry flags. Errors are usage errors naming them.
func checkClient(reg registryFlags) (*mirror.Client, error) {
	var mo mirror.Options
	if err := reg.apply(&mo); err != nil {
		return nil, err
	}
	mc, err := mirror.New(mo)
	if err != nil {
		return nil, &usageError{err}
	}
	return mc, nil
}

// warnNotChecked warns about the clusters check did not re-render when it
// re-rendered others (none re-rendered: checkOutcome's error says so).
func warnNotChecked(inv *invocation, rep *check.Report) {
	if not := rep.NotChecked(); len(not) > 0 && rep.Checked() > 0 {
		inv.warnf("check: %s not re-rendered, so not checked: %s (the reasons are above)", lint.Count(len(not), "cluster"), strings.Join(not, ", "))
	}
}

// checkOutcome is check's error from what it found: exit 2 when images
// could not be checked (the registry would not say: not the catalog's
// fault), exit 1 on any error finding, exit 1 too when nothing at all was
// checked (no cluster re-rendered, no image checked: a clean exit would
// say the catalog was verified), else nil. images is nil without
// --registry.
func checkOutcome(rep *check.Report, images *check.RegistryReport) error {
	if images != nil && images.Unknown > 0 {
		return fmt.Errorf("check --registry: %d images could not be checked (see the findings above): check --dst-registry, --dst-username/--dst-password, --ca-file and the network", images.Unknown)
	}
	if n := rep.Errors(); n > 0 {
		return &pipeline.InputError{Err: &checkFindingsError{n: n}}
	}
	if rep.Checked() == 0 && (images == nil || images.Checked == 0) {
		return &pipeline.InputError{Err: errNothingChecked}
	}
	return nil
}

// errNothingChecked is check's error when no cluster was re-rendered and
// no image checked.
var errNothingChecked = errors.New("check: nothing was verified: no cluster was re-rendered (the report above says why for each) and no image was checked; name a cluster of the alauda target (--cluster), or check the images of olm clusters with --registry")

// printCheck prints check's report in format (text: the findings, the
// report and the registry line; json or sarif: the findings alone, as
// lint prints them), annotates the findings and writes the job summary in
// CI, and returns check's outcome (checkOutcome).
func printCheck(cmd *cobra.Command, inv *invocation, rep *check.Report, images *check.RegistryReport, format string) error {
	out := cmd.OutOrStdout()
	warnNotChecked(inv, rep)
	if format != "text" {
		// Machine formats stay alone on stdout (as lint's).
		if err := lint.Format(out, rep.Findings, format); err != nil {
			return err
		}
		if inv.inCI() {
			inv.ci.Annotate(rep.Findings)
		}
		return checkOutcome(rep, images)
	}
	for _, f := range rep.Findings {
		fmt.Fprintln(out, logging.Clean(ci.FormatFinding(f)))
	}
	if len(rep.Findings) > 0 {
		fmt.Fprintln(out)
	}
	fmt.Fprint(out, logging.Clean(rep.Text()))
	if images != nil {
		fmt.Fprintf(out, "registry: %d manifests checked at the destinations, %d missing, %d not checked\n", images.Checked, images.Missing, images.Unknown)
	}
	if inv.inCI() {
		inv.ci.Annotate(rep.Findings)
		if err := inv.ci.Summary(rep.Markdown()); err != nil {
			inv.warnf("CI summary: %v", err)
		}
	}
	return checkOutcome(rep, images)
}
