package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
)

// TestPlanCountsAsTheRun: a version relisted beside a new version of the
// same artifact is counted in the plan's summary and headline as the run
// counts it in its commit subject (relist 1, upgrade 1).
func TestPlanCountsAsTheRun(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	p := filepath.Join(f.source, "packages/tiny/1.1.0/manifest.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Dir(p))
	f.commit(t, "remove 1.1.0")
	f.run(t)
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, data, 0o644)
	f.addVersion(t, "1.2.0") // commits 1.1.0 back too

	o := PlanOptions{Options: Options{Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog)}}
	plan, err := PlanRun(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	res := f.run(t)
	n := model.CountChanges(res.Changes.List())
	s := plan.Summary
	if n[model.ChangeRelisted] != 1 || n[model.ChangeUpgraded] != 1 {
		t.Fatalf("run: %+v, want 1 relisted and 1 upgraded", res.Changes)
	}
	if s.Relisted != n[model.ChangeRelisted] || s.Upgraded != n[model.ChangeUpgraded] || s.Listed != 0 || s.Delisted != 0 {
		t.Errorf("plan summary %+v, want the run's counts %v", s, n)
	}
	if md := plan.Markdown(); !strings.Contains(md, "**0 listed, 1 upgraded, 0 delisted, 1 relisted**") {
		t.Errorf("plan headline:\n%s", md)
	}
}
