package runbench

import (
	"context"
	"fmt"
	"github.com/operator-publish/publish/internal/logging"
	"strings"
	"testing"
	"time"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/pipeline"
	pkgsource "github.com/operator-publish/publish/internal/source"
)

// BenchmarkRun times pipeline.Run, the whole of `publish run`, for one
// changed version: change detection, scan and lint, reading the changed
// bundle, mirroring its images, cloning the catalog (a local bare repo),
// rendering, committing and pushing. Before every iteration the catalog
// branch is reset to the seeded tip (untimed), so every iteration
// publishes the same change. Metrics: run-ms is the wall time minus the
// registry's busy time (registry-ms), per run; repo-opens is how often a
// run opened the package repo (source.Opens), which must be 1.
func BenchmarkRun(b *testing.B) {
	if testing.Short() {
		b.Skip("generating the benchmark repos is skipped under -short")
	}
	for _, p := range sizes {
		for _, way := range []string{"incremental", "full"} {
			b.Run(p.String()+",way="+way, func(b *testing.B) {
				src, repo := source(b, p)
				cat := catalogFor(b, p, src, repo.Back(1))
				busy := registries(b, p)
				ctx := context.Background()
				// A change set given forces the full read (every manifest,
				// the whole tip): what run did before the engine was one.
				var changed func(a, v string) bool
				if way == "full" {
					art, ver := p.Changed()
					changed = func(a, v string) bool { return a == art && v == ver }
				}
				var wall, reg time.Duration
				b.ResetTimer()
				for i := range b.N {
					b.StopTimer()
					cat.reset(b)
					busy.take()
					b.StartTimer()
					t0 := time.Now()
					log := &stampedLog{t0: t0}
					opens := pkgsource.Opens()
					res, err := pipeline.Run(ctx, pipeline.Options{
						Source:  src,
						Catalog: gitops.Options{URL: cat.Bare},
						Mirror:  mirror.Options{DstRegistry: dstRegistry, Insecure: true},
						NoFetch: true,
						Changed: changed,
						Log:     logging.New(log, logging.Options{}),
					})
					wall += time.Since(t0)
					reg += busy.take()
					if err != nil {
						b.Fatalf("run: %v\n%s", err, log.String())
					}
					if n := pkgsource.Opens() - opens; n != 1 {
						b.Fatalf("run opened the package repo %d times, want once", n)
					}
					if res.BundlesRead != 1 || res.Commit == "" {
						b.Fatalf("run: %d bundles read, commit %q, want 1 and a commit\n%s", res.BundlesRead, res.Commit, log.String())
					}
					if i == 0 || i == b.N-1 {
						b.Logf("run %d of %d, its log (seconds since its start):\n%s", i+1, b.N, log.String())
					}
				}
				n := time.Duration(b.N)
				b.ReportMetric(float64((wall-reg)/n)/1e6, "run-ms")
				b.ReportMetric(float64(reg/n)/1e6, "registry-ms")
				b.ReportMetric(1, "repo-opens")
			})
		}
	}
}

// BenchmarkCommitPush times what an incremental `run` does with the
// catalog once the changed artifact is rendered: open the branch tip
// (local bare repo, in place), read the changed artifact's generated and
// rendered files and the state, write the new commit from Git objects
// (the state, the artifact's generated files and its rendered directory
// replaced), and push it with compare-and-swap. Metrics per iteration:
// open-ms (open the tip and read what the change needs), commit-ms,
// push-ms (the push on its own), objects and pack-KiB sent.
func BenchmarkCommitPush(b *testing.B) {
	if testing.Short() {
		b.Skip("generating the benchmark repos is skipped under -short")
	}
	for _, p := range sizes {
		b.Run(p.String(), func(b *testing.B) {
			src, repo := source(b, p)
			cat := catalogFor(b, p, src, repo.Back(1))
			art, _ := p.Changed()
			ctx := context.Background()
			o := gitops.Options{URL: cat.Bare}
			var tOpen, tCommit, tPush time.Duration
			var objects int
			var bytes int64
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				cat.reset(b)
				b.StartTimer()
				t0 := time.Now()
				tip, err := catalog.OpenTip(ctx, o)
				if err != nil {
					b.Fatal(err)
				}
				state, ok, err := tip.ReadFile(gitops.StatePath("global"))
				if err != nil || !ok {
					b.Fatalf("state: %v", err)
				}
				dirs := []string{"publish/generated/global/" + art, "rendered/global/" + art}
				files := map[string][]byte{}
				for _, d := range dirs {
					fs, err := tip.Files(d, nil)
					if err != nil || len(fs) == 0 {
						b.Fatalf("%s: %d files, %v", d, len(fs), err)
					}
					for p, data := range fs {
						// The re-rendered artifact: every file changes.
						files[p] = append(data, fmt.Sprintf("# run %d\n", i)...)
					}
				}
				files[gitops.StatePath("global")] = append(state, fmt.Sprintf("# run %d\n", i)...)
				t1 := time.Now()
				w, err := tip.Commit(catalog.Replace(dirs, files), catalog.CommitOptionsFor(o, "publish one version", t1))
				if err != nil || w.Commit.IsZero() {
					b.Fatalf("commit: %v %+v", err, w)
				}
				t2 := time.Now()
				st, err := tip.Push(ctx, w)
				if err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				tip.Close()
				if tip.Head() != w.Commit.String() || w.Parent != cat.Head {
					b.Fatalf("pushed %s on %s, tip %s", w.Commit, w.Parent, tip.Head())
				}
				tOpen += t1.Sub(t0)
				tCommit += t2.Sub(t1)
				tPush += t3.Sub(t2)
				objects, bytes = st.Objects, st.Bytes
			}
			n := time.Duration(b.N)
			b.ReportMetric(float64(tOpen/n)/1e6, "open-ms")
			b.ReportMetric(float64(tCommit/n)/1e6, "commit-ms")
			b.ReportMetric(float64(tPush/n)/1e6, "push-ms")
			b.ReportMetric(float64(objects), "objects")
			b.ReportMetric(float64(bytes)/1024, "pack-KiB")
		})
	}
}

// stampedLog keeps the run's log lines, each prefixed with the seconds
// since t0.
type stampedLog struct {
	t0 time.Time
	b  strings.Builder
}

func (l *stampedLog) Write(p []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(p), "\n") {
		if line != "" {
			fmt.Fprintf(&l.b, "%7.3f %s", time.Since(l.t0).Seconds(), line)
		}
	}
	return len(p), nil
}

func (l *stampedLog) String() string { return l.b.String() }
