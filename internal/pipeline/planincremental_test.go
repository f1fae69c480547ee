package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/report"
)

// TestPlanIncrementalEqualsFull: for each kind of change, the incremental
// plan (only the touched artifacts' manifests and catalog files read) is
// exactly the plan made from the whole package repo and a checkout of the
// catalog.
func TestPlanIncrementalEqualsFull(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	opts := func(pr bool) PlanOptions {
		o := PlanOptions{Options: Options{Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog)}}
		if pr {
			o.PR, o.TargetBranch = true, "master"
		}
		o.defaults()
		return o
	}
	check := func(name string, pr bool, wantArtifacts int) *report.Plan {
		t.Helper()
		ctx := context.Background()
		inc, err := planIncremental(ctx, opts(pr))
		if err != nil {
			t.Fatalf("%s: incremental plan: %v", name, err)
		}
		full, err := planFull(ctx, opts(pr))
		if err != nil {
			t.Fatalf("%s: full plan: %v", name, err)
		}
		a, _ := json.MarshalIndent(inc, "", " ")
		b, _ := json.MarshalIndent(full, "", " ")
		if string(a) != string(b) {
			t.Errorf("%s: incremental plan differs from the full plan:\n--- incremental\n%s\n--- full\n%s", name, a, b)
		}
		if os.Getenv("PLAN_DEBUG") != "" {
			t.Logf("%s:\n%s", name, a)
		}
		if len(inc.Artifacts) != wantArtifacts {
			t.Errorf("%s: %d artifacts in the plan, want %d: %+v", name, len(inc.Artifacts), wantArtifacts, inc.Artifacts)
		}
		return inc
	}
	check("nothing changed", false, 0)

	os.WriteFile(filepath.Join(f.source, "README.md"), []byte("not a manifest\n"), 0o644)
	f.commit(t, "readme")
	check("a file that is not a manifest", false, 0)

	f.addVersion(t, "1.2.0")
	check("add version", false, 1)

	p := filepath.Join(f.source, "packages/tiny/1.0.0/manifest.yaml")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(data), "displayName: Tiny", "displayName: Tiny Operator", 1)), 0o644)
	f.commit(t, "edit 1.0.0 in place")
	check("edit in place", false, 1)

	os.RemoveAll(filepath.Join(f.source, "packages/tiny/1.1.0"))
	f.commit(t, "remove 1.1.0")
	check("remove version", false, 1)

	f.writeManifest(t, "other", "1.0.0")
	f.commit(t, "add other")
	check("add artifact (its bundle is missing: a lint finding)", false, 2)

	// Publish, then work on a branch: the base is the merge-base.
	os.RemoveAll(filepath.Join(f.source, "packages/other"))
	f.commit(t, "drop other")
	f.run(t)

	// An artifact whose bundle requires tiny, which the change does not
	// touch (the incremental way reads its state entry), and a package no
	// version of which is listed: one dependency finding, both ways.
	f.pushRequiring(t, "needy", "1.0.0", [2]string{"tiny", ">=1.0.0"}, [2]string{"absent", "1.x"})
	f.commit(t, "add needy")
	needy := check("add an artifact that requires an untouched one", false, 1)
	if fs := planDependencies(needy); len(fs) != 1 || !strings.Contains(fs[0].Message, "package absent") {
		t.Errorf("dependency findings: %v, want the one of absent", fs)
	}
	os.RemoveAll(filepath.Join(f.source, "packages/needy"))
	f.commit(t, "drop needy")
	head, _ := f.repo.Head()
	wt, _ := f.repo.Worktree()
	if err := wt.Checkout(gitCheckout{Branch: "refs/heads/feature", Create: true, Hash: head.Hash()}.opts()); err != nil {
		t.Fatal(err)
	}
	f.addVersion(t, "1.3.0")
	check("pull request", true, 1)

	os.Rename(filepath.Join(f.source, "packages/tiny"), filepath.Join(f.source, "packages/tiny2"))
	for _, v := range []string{"1.0.0", "1.2.0", "1.3.0"} {
		p := filepath.Join(f.source, "packages/tiny2", v, "manifest.yaml")
		data, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(strings.Replace(string(data), "name: tiny.v", "name: tiny2.v", 1)), 0o644)
	}
	f.commit(t, "rename tiny to tiny2")
	check("rename artifact", true, 2)

	os.RemoveAll(filepath.Join(f.source, "packages/tiny2"))
	f.commit(t, "remove everything")
	check("remove artifact", false, 1)
}

// TestPlanIncrementalFallsBack: a catalog whose state lacks manifest paths
// (written by an older publish) is planned the full way.
func TestPlanIncrementalFallsBack(t *testing.T) {
	f := newFixture(t)
	o := PlanOptions{Options: Options{Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog)}}
	o.defaults()
	_, err := planIncremental(context.Background(), o)
	var full *catalog.FullReadRequiredError
	if !errors.As(err, &full) {
		t.Fatalf("empty catalog: %v, want *catalog.FullReadRequiredError", err)
	}
	p, err := PlanRun(context.Background(), o)
	if err != nil || len(p.Artifacts) != 1 {
		t.Fatalf("full plan of a first publish: %v %+v", err, p)
	}
}

// TestPlanIncrementalCatalogPath: with the catalog in a directory of its
// repo (--catalog-path), the incremental plan reads it there.
func TestPlanIncrementalCatalogPath(t *testing.T) {
	f := newFixture(t)
	cat := catalogOpts(f.catalog)
	cat.Path = "deploy/catalog"
	if _, err := Run(context.Background(), Options{Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: cat}); err != nil {
		t.Fatal(err)
	}
	f.addVersion(t, "1.2.0")
	o := PlanOptions{Options: Options{Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: cat}}
	o.defaults()
	inc, err := planIncremental(context.Background(), o)
	if err != nil {
		t.Fatalf("incremental plan: %v", err)
	}
	full, err := planFull(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(inc)
	b, _ := json.Marshal(full)
	if string(a) != string(b) || len(inc.Files) != 1 {
		t.Errorf("incremental plan differs from the full plan:\n%s\n%s", a, b)
	}
}

// TestPlanDiffFailureIsAnError: change detection that fails (the package
// repo cannot be read: its HEAD is gone) is an error of the plan, not a
// silent fallback to the full read.
func TestPlanDiffFailureIsAnError(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	if err := os.Remove(filepath.Join(f.source, ".git", "HEAD")); err != nil {
		t.Fatal(err)
	}
	o := PlanOptions{Options: Options{Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog)}}
	o.defaults()
	_, err := PlanRun(context.Background(), o)
	var full *catalog.FullReadRequiredError
	if err == nil || errors.As(err, &full) || !strings.Contains(err.Error(), "change detection") {
		t.Fatalf("plan with an unknown --base: %v, want the change detection error", err)
	}
}
