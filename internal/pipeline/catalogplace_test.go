package pipeline

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/mirror"

	"github.com/operator-publish/publish/internal/testenv"
)

// tip returns the commit at the tip of branch in the repo at dir.
func tip(t *testing.T, dir, branch string) *object.Commit {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		t.Fatalf("%s has no branch %s: %v", dir, branch, err)
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fixture) runWith(t *testing.T, source string, cat gitops.Options) *Result {
	t.Helper()
	res, err := Run(context.Background(), Options{
		Source:  source,
		Mirror:  mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog: cat,
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

// TestCatalogPath: --catalog-path puts the whole catalog below a directory
// of its repo; other content of the repo stays; a rerun commits nothing.
func TestCatalogPath(t *testing.T) {
	f := newFixture(t)
	cat := gitops.Options{URL: f.catalog, Path: "deploy/catalog"}
	if res := f.runWith(t, f.source, cat); res.Commit == "" {
		t.Fatal("first run made no commit")
	}
	c := tip(t, f.catalog, "main")
	for _, p := range []string{"deploy/catalog/publish/state/global.yaml", "deploy/catalog/rendered/global/tiny/artifact_tiny.yaml", "deploy/catalog/kustomize/clusters/global/kustomization.yaml", "deploy/catalog/argocd/application.yaml"} {
		if _, err := c.File(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := c.File("publish/state/global.yaml"); err == nil {
		t.Error("a state file at the repo root")
	}
	if res := f.runWith(t, f.source, cat); res.Commit != "" {
		t.Errorf("the rerun committed %s", res.Commit)
	}
}

// TestCatalogInPackageRepo: the catalog lives in the package repo itself,
// on another branch, or on the same branch below --catalog-path; a run on
// the commit publish pushed finds nothing to do (no loop of CI runs).
func TestCatalogInPackageRepo(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		testenv.Skip(t, "needs git for a local clone of the package repo")
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(gitBin, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	t.Run("another branch", func(t *testing.T) {
		f := newFixture(t)
		// The package repo is the catalog repo; the catalog goes to branch
		// "catalog" (not checked out, so a push to it is allowed).
		cat := gitops.Options{URL: f.source, Branch: "catalog", CreateBranch: true}
		res := f.runWith(t, f.source, cat)
		if res.Commit == "" {
			t.Fatal("no commit")
		}
		c := tip(t, f.source, "catalog")
		if _, err := c.File("publish/state/global.yaml"); err != nil {
			t.Fatal(err)
		}
		if _, err := tip(t, f.source, "master").File("publish/state/global.yaml"); err == nil {
			t.Error("the catalog landed on the package branch")
		}
		if res := f.runWith(t, f.source, cat); res.Commit != "" {
			t.Errorf("the rerun committed %s", res.Commit)
		}
	})

	t.Run("same branch, a directory", func(t *testing.T) {
		f := newFixture(t)
		origin := filepath.Join(t.TempDir(), "origin.git")
		run("clone", "--quiet", "--bare", f.source, origin)
		ci := filepath.Join(t.TempDir(), "ci")
		run("clone", "--quiet", origin, ci)
		head := tip(t, origin, "master")
		cat := gitops.Options{URL: origin, Branch: "master", Path: "catalog"}
		res := f.runWith(t, ci, cat)
		if res.Commit == "" {
			t.Fatal("no commit")
		}
		c := tip(t, origin, "master")
		if len(c.ParentHashes) != 1 || c.ParentHashes[0] != head.Hash {
			t.Fatalf("the catalog commit %s is not on top of the package commit %s", c.Hash, head.Hash)
		}
		for _, p := range []string{"catalog/publish/state/global.yaml", "packages/tiny/1.0.0/manifest.yaml"} {
			if _, err := c.File(p); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		}
		// CI runs again on the commit publish pushed: nothing to do.
		run("-C", ci, "pull", "--quiet", "--ff-only")
		if res := f.runWith(t, ci, cat); res.Commit != "" {
			t.Errorf("the run on publish's own commit committed %s", res.Commit)
		}
		// A new version on top is published.
		os.RemoveAll(filepath.Join(f.source, "packages"))
		f.pushVersion(t, "1.2.0")
		data, _ := os.ReadFile(filepath.Join(f.source, "packages/tiny/1.2.0/manifest.yaml"))
		os.MkdirAll(filepath.Join(ci, "packages/tiny/1.2.0"), 0o755)
		os.WriteFile(filepath.Join(ci, "packages/tiny/1.2.0/manifest.yaml"), data, 0o644)
		run("-C", ci, "add", "-A")
		run("-C", ci, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "tiny 1.2.0")
		run("-C", ci, "push", "--quiet", "origin", "HEAD:master")
		res = f.runWith(t, ci, cat)
		if res.Commit == "" || len(res.Changes.Upgraded)+len(res.Changes.Listed) == 0 {
			t.Fatalf("tiny 1.2.0 was not published: %+v", res.Changes)
		}
	})
}

// TestRunMissingBranch: a run to a branch the catalog repo lacks while it
// has others is refused with *gitops.MissingBranchError, nothing pushed;
// --create-branch creates it and leaves main as it was.
func TestRunMissingBranch(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	main := tip(t, f.catalog, "main").Hash
	_, err := Run(context.Background(), Options{
		Source:  f.source,
		Mirror:  mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog: gitops.Options{URL: f.catalog, Branch: "mian"},
	})
	var mb *gitops.MissingBranchError
	if !errors.As(err, &mb) {
		t.Fatalf("run to a missing branch: %v, want *gitops.MissingBranchError", err)
	}
	if res := f.runWith(t, f.source, gitops.Options{URL: f.catalog, Branch: "staging", CreateBranch: true}); res.Commit == "" {
		t.Fatal("--create-branch: no commit")
	}
	if _, err := tip(t, f.catalog, "staging").File("publish/state/global.yaml"); err != nil {
		t.Error(err)
	}
	if got := tip(t, f.catalog, "main").Hash; got != main {
		t.Errorf("main moved from %s to %s", main, got)
	}
}

// TestRunNotACatalog: --catalog naming a repo that holds files but no
// publish/state.yaml (here the package repo itself) is refused before
// anything is mirrored; --init-catalog publishes into it.
func TestRunNotACatalog(t *testing.T) {
	f := newFixture(t)
	head, err := f.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	bare := t.TempDir()
	if _, err := git.PlainClone(bare, true, &git.CloneOptions{URL: f.source}); err != nil {
		t.Fatal(err)
	}
	o := Options{
		Source:  f.source,
		Mirror:  mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog: gitops.Options{URL: bare, Branch: head.Name().Short()},
	}
	_, err = Run(context.Background(), o)
	var nc *gitops.NotCatalogError
	var ie *InputError
	if !errors.As(err, &nc) || !errors.As(err, &ie) || !strings.Contains(err.Error(), "packages/") || !strings.Contains(err.Error(), "--init-catalog") {
		t.Fatalf("run into the package repo: %v, want a *gitops.NotCatalogError naming packages/", err)
	}
	reg, _ := name.NewRegistry(f.dst, name.Insecure)
	if repos, err := remote.Catalog(context.Background(), reg); err != nil || len(repos) != 0 {
		t.Fatalf("something was mirrored before the refusal: %v %v", repos, err)
	}
	o.Catalog.InitCatalog = true
	res, err := Run(context.Background(), o)
	if err != nil || res.Commit == "" {
		t.Fatalf("--init-catalog: %v", err)
	}
}
