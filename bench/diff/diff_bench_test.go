package diffbench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/operator-publish/publish/internal/source/diff"

	"github.com/operator-publish/publish/internal/testenv"
)

// Full is the size the benchmark target is stated for: 2,000 artifacts ×
// 5 versions over 5,000 commits.
var Full = Params{Artifacts: 2000, Versions: 5, Commits: 5000}

// BenchmarkComputeOneChange measures diff.Compute in run mode (base = the
// state commit, HEAD~1) when HEAD edits one version: repo open, ancestry
// check, packages tree diff, parsing the two manifest blobs. The small repo
// shows that the cost does not grow with the repo; "back=100" shows it
// grows with the change (about 200 added versions).
func BenchmarkComputeOneChange(b *testing.B) {
	small := Params{Artifacts: 200, Versions: 5, Commits: 500}
	for _, tc := range []struct {
		p    Params
		back int
	}{{small, 1}, {Full, 1}, {Full, 100}} {
		b.Run(tc.p.String()+",back="+strconv.Itoa(tc.back), func(b *testing.B) {
			testenv.Short(b, "generates the benchmark repo")
			start := time.Now()
			repo, err := Cached(tc.p)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("repo %s ready in %s", repo.Dir, time.Since(start).Round(time.Millisecond))
			o := diff.Options{Repo: repo.Dir, StateCommit: repo.Back(tc.back)}
			res, err := diff.Compute(context.Background(), o)
			if err != nil {
				b.Fatal(err)
			}
			if res.All || len(res.Warnings) > 0 || len(res.Changes) == 0 {
				b.Fatalf("unexpected result: %+v", res)
			}
			if a, v := tc.p.Changed(); tc.back == 1 && (len(res.Changes) != 1 || res.Changes[0].Kind != diff.Modified || !res.Changed(a, v)) {
				b.Fatalf("want one modified %s %s, got %+v", a, v, res.Changes)
			}
			b.ReportMetric(float64(len(res.Changes)), "changes")
			b.ResetTimer()
			for b.Loop() {
				if _, err := diff.Compute(context.Background(), o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
