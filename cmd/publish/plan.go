package main

import (
	"encoding/json"
	"fmt"
	"github.com/operator-publish/publish/internal/logging"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/ci"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/shard"
	"github.com/spf13/cobra"
)

// PlanFindingsError is returned when the plan holds lint errors (exit 1);
// the findings were already printed and annotated.
type planFindingsError struct{ n int }

func (e *planFindingsError) Error() string {
	return lint.Count(e.n, "lint error")
}

func newPlanCmd(inv *invocation) *cobra.Command {
	var (
		p        publishFlags
		o        pipeline.PlanOptions
		planJSON string
		matrix   int
		format   string
	)
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Review a change: what a run would list, upgrade, delist, mirror and render, with no writes",
		Long: `plan computes what ` + "`publish run`" + ` would do, without writing anything: bundles are
read at the source, the destination only gets HEAD requests (when the
credentials allow), and the catalog is rendered into a throw-away clone that
is never pushed. It needs no write token, and takes no commit, signing or
copy flags.

In a pull request (GitHub Actions pull_request events, GitLab merge request
pipelines, or --target-branch) it compares HEAD with its merge base on the
target branch; elsewhere with the source commit of the last publish.

It prints a Markdown plan (also the job summary in GitHub Actions), annotates
lint findings at file:line, and with --plan-json writes the plan as JSON
(docs/plan-json.md). Exit 1 when there is a lint error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.TargetBranch != "" {
				o.PR = true
			} else if inv.ci != nil {
				if pr, target := inv.ci.PullRequest(); pr {
					o.PR, o.TargetBranch = true, target
				}
			}
			if o.PR {
				// Where credentials go is the base's to say.
				if err := inv.pullRequestTrust(cmd.Context(), cmd.Flags(), &p.source, &p.src, o.Base, o.TargetBranch, !o.NoFetch); err != nil {
					return err
				}
			}
			if err := checkMatrixFlags(cmd, matrix, format); err != nil {
				return err
			}
			if err := p.options(inv, &o.Options, false); err != nil {
				return err
			}
			plans, err := pipeline.PlanClusters(cmd.Context(), o)
			if err != nil {
				return err
			}
			// One cluster: its plan, as before clusters; several: one
			// plan per cluster (a JSON array, docs/plan-json.md).
			plan := plans[0]
			var doc any = plan
			md := plan.Markdown()
			if len(plans) > 1 {
				doc, md = plans, report.ClusterTable(plans)
				plan = &report.Plan{Findings: []lint.Finding{}}
				for _, pl := range plans {
					md += pl.Markdown() + "\n"
					plan.Artifacts = append(plan.Artifacts, pl.Artifacts...)
					plan.Files = append(plan.Files, pl.Files...)
					plan.Findings = append(plan.Findings, pl.Findings...)
					plan.Summary.Errors += pl.Summary.Errors
				}
			}
			if matrix > 0 {
				// The matrix alone on stdout, for a CI step output; the
				// plan goes to the job summary.
				if err := printMatrix(cmd, inv, plans, matrix, format); err != nil {
					return err
				}
			} else {
				fmt.Fprint(cmd.OutOrStdout(), logging.Clean(md))
			}
			if err := writePlanJSON(planJSON, doc); err != nil {
				return err
			}
			var names []string
			seen := map[string]bool{}
			for _, a := range plan.Artifacts {
				if !seen[a.Name] {
					seen[a.Name] = true
					names = append(names, a.Name)
				}
			}
			changed := "false"
			if len(plan.Files) > 0 {
				changed = "true"
			}
			inv.setOutputs(map[string]string{
				ci.OutputChanged:   changed,
				ci.OutputArtifacts: strings.Join(names, "\n"),
				ci.OutputPlanJSON:  planJSON,
			})
			if inv.inCI() {
				inv.ci.Annotate(plan.Findings)
				if err := inv.ci.Summary(md); err != nil {
					inv.warnf("CI summary: %v", err)
				}
			}
			if plan.Summary.Errors > 0 {
				return &pipeline.InputError{Err: &planFindingsError{n: plan.Summary.Errors}}
			}
			return nil
		},
	}
	p.register(cmd, false)
	fs := cmd.Flags()
	p.src.registerMirrors(fs)
	fs.StringVar(&o.Base, "base", "", "compare against this source revision (default: the merge base with the target branch in a pull request, else the source commit of the last publish)")
	fs.StringVar(&o.TargetBranch, "target-branch", "", "pull-request mode against this branch (default: from the CI: GITHUB_BASE_REF, CI_MERGE_REQUEST_TARGET_BRANCH_NAME)")
	fs.BoolVar(&o.NoFetch, "no-fetch", false, "never fetch from the package repo's origin to deepen a shallow clone")
	fs.StringVar(&planJSON, "plan-json", "", "also write the plan as JSON to this file (docs/plan-json.md)")
	fs.IntVar(&matrix, "matrix", 0, "print, instead of the plan, the parts of a run split over a CI matrix (run --shard I/N) as JSON: this many, capped at the CI's limit and at the destination repositories the plan copies to (docs/scale-out.md)")
	fs.StringVar(&format, "matrix-format", shard.FormatGitHub, "the JSON --matrix prints: github (fromJSON for strategy.matrix), tekton (matrix params), argo (withParam), gitlab (the number for parallel:)")
	withEnvHelp(fs)
	return cmd
}

// printMatrix prints the matrix of at most want parts (shard.Matrix in
// format) for the plans: capped at the CI's limit and at the distinct
// destination repositories of the images the plans copy (when the plan
// knows the destination), and says on stderr the load the parts put on
// each source registry. It sets the CI output "matrix".
func printMatrix(cmd *cobra.Command, inv *invocation, plans []*report.Plan, want int, format string) error {
	repos := map[string]bool{}
	for _, pl := range plans {
		for _, a := range pl.Artifacts {
			for _, v := range a.Versions {
				for _, im := range v.Images {
					if r, err := name.ParseReference(im.Destination); err == nil {
						repos[r.Context().Name()] = true
					}
				}
			}
		}
	}
	n, err := shard.MatrixParts(want, len(repos), format)
	if err != nil {
		return &usageError{err}
	}
	m, err := shard.Matrix(n, format)
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), m)
	inv.logf("matrix: %d parts (asked %d; %d destination repositories in the plan); each part copies with --concurrency (default 4) operations at once, so the source registries see up to %d at once", n, want, len(repos), 4*n)
	inv.setOutputs(map[string]string{"matrix": m})
	return nil
}

// writePlanJSON writes doc (a plan, or one per cluster) as indented JSON
// to path (--plan-json; "": nothing), making its directory. Errors name
// the flag.
func writePlanJSON(path string, doc any) error {
	if path == "" {
		return nil
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("--plan-json: %w", err)
		}
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("--plan-json: %w", err)
	}
	return nil
}

// checkMatrixFlags refuses, before anything is read, a --matrix below 1 and
// an unknown --matrix-format (usage errors naming the flag).
func checkMatrixFlags(cmd *cobra.Command, matrix int, format string) error {
	if !cmd.Flags().Changed("matrix") && !cmd.Flags().Changed("matrix-format") {
		return nil
	}
	if _, err := shard.MatrixParts(matrix, 0, format); err != nil {
		return &usageError{err}
	}
	if matrix < 1 {
		return usagef("--matrix %d: give the number of parts wanted, at least 1", matrix)
	}
	return nil
}
