package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/verify"
	"github.com/spf13/cobra"
)

func newMergeShardsCmd(inv *invocation) *cobra.Command {
	var (
		p          publishFlags
		o          pipeline.Options
		reportFile string
		key        string
		dir        string
	)
	cmd := &cobra.Command{
		Use:   "merge-shards RESULT...",
		Short: "Commit a run split over a CI matrix: check every part's result and the destination, then render and commit",
		Long: `merge-shards is the one writer of a run split over the jobs of a CI matrix
(run --shard I/N --shard-result FILE in each job; docs/scale-out.md). Give it
every part's result file, with the flags run would take.

It checks that the results are sealed and unchanged, that they share one
plan, that each part 1..N is there once and their items are the plan, and
that no image failed; then it reads, lints and verifies the package repo as
run does, checks that every image the catalog will name is at the
destination with the digest a part recorded (one HEAD each, nothing
copied), and renders and commits (or opens the pull request) exactly as
run would. A missing, failed or changed part exits non-zero naming the
parts and images, and nothing is committed; run the part again and merge
again. Run it as the fan-in job even when a part failed (GitHub: if:
${{ !cancelled() }}), so that the failure is reported where people look.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			args, err := resultFiles(args, dir)
			if err != nil {
				return err
			}
			if err := p.dst.require(); err != nil {
				return err
			}
			if err := checkReportFlag(reportFile); err != nil {
				return err
			}
			var pub []byte
			if key != "" {
				var err error
				if pub, err = keyMaterial("key", key); err != nil {
					return err
				}
			}
			var rs []*report.Report
			for _, a := range args {
				if pub != nil {
					if _, err := verify.VerifyFile(a, pub); err != nil {
						return &pipeline.InputError{Err: fmt.Errorf("RESULT %s (--key): %w", a, err)}
					}
				}
				r, err := report.ReadFile(a)
				if err != nil {
					return &pipeline.InputError{Err: fmt.Errorf("RESULT %w", err)}
				}
				rs = append(rs, r)
			}
			shards, err := pipeline.CheckShardResults(rs, args)
			var se *pipeline.ShardsError
			switch {
			case errors.As(err, &se) && se.Incomplete:
				// Parts without a result: the merge goes on to name the
				// images none has, and commits nothing.
				o.ShardProblems = se.Problems
			case err != nil:
				return &pipeline.InputError{Err: err}
			}
			if err := p.options(inv, &o, o.AllowEmpty); err != nil {
				return err
			}
			o.Shards = shards
			inv.logf("merge-shards: %d parts of the plan %s", len(rs), rs[0].Shard.Plan)
			return runAndReport(cmd, inv, o, reportFile, "")
		},
	}
	p.register(cmd, true)
	fs := cmd.Flags()
	fs.BoolVar(&o.AllowEmpty, "allow-empty", false, "allow a source without any manifest to delist every artifact")
	fs.BoolVar(&o.AllowDirty, "allow-dirty", false, "publish manifests that differ from the package repo's HEAD as they are on disk (as run)")
	fs.StringVar(&o.Base, "base", "", "compare against this source revision (as run; give the parts the same)")
	fs.StringVar(&reportFile, "report", "", "also write the images checked at the destination, and why any is missing, as JSON to this file (docs/report.md)")
	fs.BoolVar(&o.NoFetch, "no-fetch", false, "never fetch from the package repo's origin to deepen a shallow clone")
	fs.StringVar(&dir, "shard-results", "", "also take every *.json file of this directory as a RESULT (the parts' artifacts, downloaded into one directory)")
	fs.StringVar(&key, "key", "", "check each RESULT's signature (RESULT.sigstore.json, from run --shard-result with --cosign-key) with this public key: a file, or the key itself (PEM)")
	withEnvHelp(fs)
	return cmd
}

// resultFiles is the RESULT arguments plus every *.json file of dir
// (--shard-results), sorted; a usage error when there is none, or dir
// cannot be read.
func resultFiles(args []string, dir string) ([]string, error) {
	out := append([]string{}, args...)
	if dir != "" {
		m, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			return nil, usagef("--shard-results %s: %v", dir, err)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, usagef("--shard-results %s: not a directory", dir)
		}
		sort.Strings(m)
		out = append(out, m...)
	}
	if len(out) == 0 {
		return nil, usagef("merge-shards: give every part's result: RESULT... or --shard-results DIR")
	}
	return out, nil
}
