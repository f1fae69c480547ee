package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/operator-publish/publish/internal/check"
	"github.com/operator-publish/publish/internal/mirror"
)

// cloneCatalog checks out the catalog's main branch into a new directory
// and returns it and its HEAD.
func (f *fixture) cloneCatalog(t *testing.T) (string, *git.Repository, string) {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: f.catalog, ReferenceName: "refs/heads/main"})
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	return dir, repo, head.Hash().String()
}

func (f *fixture) runCluster(t *testing.T, cluster, base string) {
	t.Helper()
	if _, err := Run(context.Background(), Options{Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog), Cluster: cluster, Base: base}); err != nil {
		t.Fatalf("run --cluster %s: %v", cluster, err)
	}
}

// TestCheckRunCatalog: a catalog that `publish run` made, for two
// clusters, passes `publish check`; after a run that adds a version and
// delists another, the summary against the earlier commit names both on
// each cluster (also after one run per cluster: global, then edge), and a
// hand edit is found at its file.
func TestCheckRunCatalog(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	dir, repo, _ := f.cloneCatalog(t)
	overlay, err := os.ReadFile(filepath.Join(dir, "kustomize/clusters/global/kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	edge := strings.Replace(string(overlay), "publish/generated/global", "publish/generated/edge", 1) + "patches:\n- target: {kind: Artifact}\n  patch: |-\n    - op: replace\n      path: /spec/registry\n      value: registry.edge.example.com\n"
	os.MkdirAll(filepath.Join(dir, "kustomize/clusters/edge"), 0o755)
	os.WriteFile(filepath.Join(dir, "kustomize/clusters/edge/kustomization.yaml"), []byte(edge), 0o644)
	wt, _ := repo.Worktree()
	wt.AddWithOptions(&git.AddOptions{All: true})
	if _, err := wt.Commit("edge overlay", &git.CommitOptions{Author: &object.Signature{Name: "u", Email: "u@example.com", When: time.Unix(1700000000, 0)}}); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	f.runCluster(t, "edge", "")

	dir, _, base := f.cloneCatalog(t)
	rep, err := check.Run(context.Background(), check.Options{CatalogDir: dir, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors() != 0 || len(rep.Findings) != 0 || len(rep.Clusters) != 2 || !rep.Clusters[0].Checked || !rep.Clusters[1].Checked {
		t.Fatalf("a catalog made by publish run: %+v\n%s", rep.Findings, rep.Text())
	}

	// One cluster per run: each cluster has its own state (its source
	// commit) and its own generated base, so the edge run after the
	// global run still renders the change on edge (before state per
	// cluster, rendered/edge stayed behind: the regression this tests).
	f.pushVersion(t, "1.2.0")
	os.RemoveAll(filepath.Join(f.source, "packages/tiny/1.0.0"))
	f.commit(t, "tiny 1.2.0, delist 1.0.0")
	f.runCluster(t, "global", "")
	f.runCluster(t, "edge", "")
	dir, _, _ = f.cloneCatalog(t)
	rep, err = check.Run(context.Background(), check.Options{CatalogDir: dir, Base: base, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors() != 0 {
		t.Fatalf("run --cluster global then run --cluster edge: %+v", rep.Findings)
	}
	text := rep.Text()
	for _, want := range []string{"edge: tiny: v1.0.0 delisted, v1.2.0 listed", "global: tiny: v1.0.0 delisted, v1.2.0 listed"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}

	p := filepath.Join(dir, "rendered/edge/tiny/artifact_tiny.yaml")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(data), "registry.edge.example.com", "registry.other.example.com", 1)), 0o644)
	rep, err = check.Run(context.Background(), check.Options{CatalogDir: dir, Base: base, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors() != 1 || rep.Findings[0].Path != "rendered/edge/tiny/artifact_tiny.yaml" || rep.Findings[0].Rule != check.RuleDrift {
		t.Errorf("hand edit: %+v", rep.Findings)
	}
}
