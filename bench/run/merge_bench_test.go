package runbench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/logging"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/shard"
)

// BenchmarkMergeShards compares, side by side in one loop, `publish
// merge-shards` with an incremental `publish run` that has nothing to
// mirror, for one changed version of the generated repos (as BenchmarkRun):
// a part (--shard 1/1) copies the change's images once, untimed; then each
// iteration resets the catalog and times a run (its images are at the
// destination: one HEAD each) and, after another reset, the merge of the
// part's result (the same HEADs, nothing copied). Metrics: run-ms and
// merge-ms, wall time minus the registry's busy time, per iteration.
func BenchmarkMergeShards(b *testing.B) {
	if testing.Short() {
		b.Skip("generating the benchmark repos is skipped under -short")
	}
	for _, p := range sizes {
		b.Run(p.String(), func(b *testing.B) {
			src, repo := source(b, p)
			cat := catalogFor(b, p, src, repo.Back(1))
			busy := registries(b, p)
			ctx := context.Background()
			opts := func() pipeline.Options {
				return pipeline.Options{Source: src, Catalog: gitops.Options{URL: cat.Bare},
					Mirror: mirror.Options{DstRegistry: dstRegistry, Insecure: true}, NoFetch: true,
					Log: logging.New(&stampedLog{t0: time.Now()}, logging.Options{})}
			}
			cat.reset(b)
			part := opts()
			part.Shard = shard.Shard{Index: 1, Total: 1}
			res, err := pipeline.Run(ctx, part)
			if err != nil || res.Shard == nil {
				b.Fatalf("part 1/1: %v", err)
			}
			shards := map[string][]mirror.Result{}
			for _, r := range res.Mirror.Images {
				r.Skipped = true
				shards[r.Source] = append(shards[r.Source], r)
			}
			var runT, mergeT, runReg, mergeReg time.Duration
			timed := func(o pipeline.Options) (time.Duration, time.Duration) {
				b.StopTimer()
				cat.reset(b)
				busy.take()
				b.StartTimer()
				t0 := time.Now()
				res, err := pipeline.Run(ctx, o)
				d := time.Since(t0)
				if err != nil || res.Commit == "" {
					b.Fatalf("%v, commit %q", err, res.Commit)
				}
				return d, busy.take()
			}
			b.ResetTimer()
			for range b.N {
				d, r := timed(opts())
				runT, runReg = runT+d, runReg+r
				m := opts()
				m.Shards = shards
				d, r = timed(m)
				mergeT, mergeReg = mergeT+d, mergeReg+r
			}
			n := time.Duration(b.N)
			b.ReportMetric(float64((runT-runReg)/n)/1e6, "run-ms")
			b.ReportMetric(float64((mergeT-mergeReg)/n)/1e6, "merge-ms")
			b.Logf("%s: run %s, merge %s per iteration (registry time aside)", p, fmt.Sprint((runT-runReg)/n), fmt.Sprint((mergeT-mergeReg)/n))
		})
	}
}
