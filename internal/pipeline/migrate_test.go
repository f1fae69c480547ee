package pipeline

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/operator-publish/publish/internal/gitops"
)

// downgradeCatalog turns the catalog checkout dir, published for global,
// into the layout before state per cluster: publish/state.yaml
// (v1alpha1), one publish/generated, overlays naming it; plus an edge
// overlay of that layout, never rendered.
func downgradeCatalog(t *testing.T, dir string) {
	t.Helper()
	state := filepath.Join(dir, "publish/state/global.yaml")
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "publish/state.yaml"), []byte(strings.Replace(string(data), gitops.StateAPIVersion, gitops.LegacyStateAPIVersion, 1)), 0o644)
	os.RemoveAll(filepath.Join(dir, "publish/state"))
	gen := filepath.Join(dir, "publish/generated")
	os.Rename(filepath.Join(gen, "global"), gen+".old")
	os.RemoveAll(gen)
	os.Rename(gen+".old", gen)
	k := filepath.Join(dir, "kustomize/clusters/global/kustomization.yaml")
	data, _ = os.ReadFile(k)
	old := strings.Replace(string(data), "publish/generated/global", "publish/generated", 1)
	os.WriteFile(k, []byte(old), 0o644)
	os.MkdirAll(filepath.Join(dir, "kustomize/clusters/edge"), 0o755)
	os.WriteFile(filepath.Join(dir, "kustomize/clusters/edge/kustomization.yaml"), []byte(old), 0o644)
}

func commitPushAll(t *testing.T, repo *git.Repository, msg string) {
	t.Helper()
	wt, _ := repo.Worktree()
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit(msg, &git.CommitOptions{All: true, Author: &object.Signature{Name: "u", Email: "u@example.com", When: time.Unix(1700000000, 0)}}); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateOlderCatalog: a catalog of the layout before state per
// cluster is upgraded by its first run, in one commit: the state file per
// cluster (the bytes a run of today writes, but for the render key), the generated base per cluster, every overlay
// naming its own base, the old state file and base gone, rendered/
// untouched.
func TestMigrateOlderCatalog(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	want := f.catalogFile(t, "publish/state/global.yaml")
	wantAV := f.catalogFile(t, "rendered/global/tiny/artifactversion_tiny.v1.0.0.yaml")
	dir, repo, _ := f.cloneCatalog(t)
	downgradeCatalog(t, dir)
	commitPushAll(t, repo, "the layout of an older publish")
	_, _, before := f.cloneCatalog(t)

	res := f.run(t)
	if res.Commit == "" {
		t.Fatal("the upgrade made no commit")
	}
	dir, repo, _ = f.cloneCatalog(t)
	c, _ := repo.CommitObject(mustHash(t, repo))
	if c.NumParents() != 1 || c.ParentHashes[0].String() != before {
		t.Fatalf("the upgrade is not one commit on the old tip")
	}
	// The render key differs: the edge overlay is new.
	noKey := regexp.MustCompile(`(?m)^  global: sha256:.*$`)
	if got := f.catalogFile(t, "publish/state/global.yaml"); noKey.ReplaceAllString(got, "") != noKey.ReplaceAllString(want, "") {
		t.Errorf("state of global after the upgrade:\n%s\nwant:\n%s", got, want)
	}
	for _, gone := range []string{"publish/state.yaml", "publish/generated/kustomization.yaml", "publish/generated/tiny/artifact_tiny.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); err == nil {
			t.Errorf("%s is still there", gone)
		}
	}
	for cl, base := range map[string]string{"global": "publish/generated/global", "edge": "publish/generated/edge"} {
		k, _ := os.ReadFile(filepath.Join(dir, "kustomize/clusters", cl, "kustomization.yaml"))
		if !strings.Contains(string(k), "- ../../../"+base+"\n") {
			t.Errorf("overlay of %s:\n%s", cl, k)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "publish/generated/global/kustomization.yaml")); err != nil {
		t.Error(err)
	}
	if got := f.catalogFile(t, "rendered/global/tiny/artifactversion_tiny.v1.0.0.yaml"); got != wantAV {
		t.Errorf("rendered changed:\n%s", got)
	}
	var rendered []string
	for _, p := range res.Files {
		if strings.HasPrefix(p, "rendered/") {
			rendered = append(rendered, p)
		}
	}
	sort.Strings(rendered)
	if len(rendered) != 0 {
		t.Errorf("the upgrade changed rendered files %v", rendered)
	}
	if res := f.run(t); res.Commit != "" {
		t.Errorf("a run after the upgrade committed %s: %v", res.Commit, res.Files)
	}
}

func mustHash(t *testing.T, repo *git.Repository) plumbing.Hash {
	t.Helper()
	h, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	return h.Hash()
}
