// Package planbench measures `publish plan`. BenchmarkPlanRun times the whole
// plan (incremental); BenchmarkPlanStages the registry-free stages of a plan
// that reads everything (first publish, fallback), on
// a generated repo of 2,000 artifacts x 5 versions with 5,000 commits (the
// generator of bench/diff): change detection, scan, lint of the manifests,
// and rendering the whole catalog through kustomize.
package planbench

import (
	"context"
	"fmt"
	"github.com/operator-publish/publish/internal/target"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	diffbench "github.com/operator-publish/publish/bench/diff"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/source/diff"

	"github.com/operator-publish/publish/internal/testenv"
)

func checkout(b *testing.B, p diffbench.Params) string {
	repo, err := diffbench.Cached(p)
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(os.TempDir(), "publish-planbench-"+p.String())
	if _, err := os.Stat(filepath.Join(dir, "packages")); err != nil {
		os.RemoveAll(dir)
		if out, err := exec.Command("git", "clone", "-q", repo.Dir, dir).CombinedOutput(); err != nil {
			b.Fatalf("git clone: %v\n%s", err, out)
		}
	}
	return dir
}

func BenchmarkPlanStages(b *testing.B) {
	testenv.Short(b, "generates the benchmark repo")
	for _, p := range []diffbench.Params{{Artifacts: 200, Versions: 5, Commits: 500}, {Artifacts: 2000, Versions: 5, Commits: 5000}} {
		b.Run(p.String(), func(b *testing.B) {
			src := checkout(b, p)
			repo, _ := diffbench.Cached(p)
			catalog := b.TempDir()
			os.MkdirAll(filepath.Join(catalog, "kustomize/clusters/global"), 0o755)
			os.WriteFile(filepath.Join(catalog, "kustomize/clusters/global/kustomization.yaml"), []byte("resources:\n- ../../../publish/generated/global\n"), 0o644)
			mc, _ := mirror.New(mirror.Options{DstRegistry: "reg.example.com/mirror"})
			ctx := context.Background()
			// The catalog as the last publish left it: rendered whole, its
			// render key recorded.
			ms0, err := manifest.Scan(src, filepath.Join(src, "packages"))
			if err != nil {
				b.Fatal(err)
			}
			arts0, _ := pipeline.Artifacts(pipeline.DestinationOf(mc), model.NewVersions(ms0), nil)
			// The catalog in memory, as run renders it.
			cat, err := render.ReadDir(catalog)
			if err != nil {
				b.Fatal(err)
			}
			key, err := target.RenderInto(cat, "global", render.Config{}, render.Merge(nil, arts0), "")
			if err != nil {
				b.Fatal(err)
			}
			var tDiff, tScan, tLint, tRender time.Duration
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				dr, err := diff.Compute(ctx, diff.Options{Repo: src, StateCommit: repo.Back(1)})
				if err != nil || len(dr.Changes) != 1 {
					b.Fatalf("diff: %v %+v", err, dr)
				}
				t1 := time.Now()
				root := filepath.Join(src, "packages")
				ms, err := manifest.Scan(src, root)
				if err != nil {
					b.Fatal(err)
				}
				files, _ := manifest.ReadFiles(src, root)
				t2 := time.Now()
				lint.Run(ctx, lint.Config{}, lint.Input{Files: files})
				t3 := time.Now()
				arts, err := pipeline.Artifacts(pipeline.DestinationOf(mc), model.NewVersions(ms), nil)
				if err != nil {
					b.Fatal(err)
				}
				// One changed operator, as the changed version brings.
				arts[len(arts)/2].DisplayName = fmt.Sprintf("changed %d", i)
				if _, err := target.RenderInto(cat, "global", render.Config{}, render.Merge(nil, arts), key); err != nil {
					b.Fatal(err)
				}
				t4 := time.Now()
				tDiff += t1.Sub(t0)
				tScan += t2.Sub(t1)
				tLint += t3.Sub(t2)
				tRender += t4.Sub(t3)
			}
			n := time.Duration(b.N)
			b.ReportMetric(float64((tDiff / n).Milliseconds()), "diff-ms")
			b.ReportMetric(float64((tScan / n).Milliseconds()), "scan-ms")
			b.ReportMetric(float64((tLint / n).Milliseconds()), "lint-ms")
			b.ReportMetric(float64((tRender / n).Milliseconds()), "render-ms")
		})
	}
}
