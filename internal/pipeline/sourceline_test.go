package pipeline

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/operator-publish/publish/internal/mirror"
)

func (f *fixture) runOpts(t *testing.T, edit func(*Options)) (*Result, string, error) {
	t.Helper()
	var log bytes.Buffer
	o := Options{
		Source:     f.source,
		Mirror:     mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog:    catalogOpts(f.catalog),
		AllowEmpty: true,
		Log:        slog.New(slog.NewTextHandler(&log, nil)),
	}
	if edit != nil {
		edit(&o)
	}
	res, err := Run(context.Background(), o)
	return res, log.String(), err
}

// TestRunDirtyTree: a manifest edited on disk, or staged with git add,
// stops run before anything is written (a *DirtyError naming the file);
// --allow-dirty publishes it and records its path in the state; after the
// edit is undone, the next run reads it again and the catalog comes back,
// tree for tree, to what the clean checkout published.
func TestRunDirtyTree(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	clean := treeOf(t, f.catalog)
	p := filepath.Join(f.source, "packages/tiny/1.1.0/manifest.yaml")
	orig, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(orig), "displayName: Tiny", "displayName: Tiny (on disk only)", 1)), 0o644)
	for _, staged := range []bool{false, true} {
		if staged {
			f.stage(t, "packages/tiny/1.1.0/manifest.yaml")
		}
		_, log, err := f.runOpts(t, nil)
		var de *DirtyError
		if !errors.As(err, &de) || len(de.Paths) != 1 || de.Paths[0] != "packages/tiny/1.1.0/manifest.yaml" || !strings.Contains(err.Error(), "--allow-dirty") {
			t.Fatalf("staged %v: run: %v, want a DirtyError naming the manifest\n%s", staged, err, log)
		}
		if !errors.As(err, new(*InputError)) {
			t.Errorf("staged %v: %v is not an input error", staged, err)
		}
		if treeOf(t, f.catalog) != clean {
			t.Fatalf("staged %v: the refused run changed the catalog", staged)
		}
	}
	res, log, err := f.runOpts(t, func(o *Options) { o.AllowDirty = true })
	if err != nil || res.Commit == "" {
		t.Fatalf("--allow-dirty: %v, commit %q\n%s", err, res.Commit, log)
	}
	state := catalogFileOf(t, f.catalog, "publish/state/global.yaml")
	if !strings.Contains(state, "dirty:") || !strings.Contains(state, "packages/tiny/1.1.0/manifest.yaml") {
		t.Fatalf("the state does not record the dirty manifest:\n%s", state)
	}
	if !strings.Contains(catalogFileOf(t, f.catalog, "rendered/global/tiny/artifact_tiny.yaml"), "on disk only") {
		t.Errorf("--allow-dirty did not publish the edit on disk")
	}
	// Undo the edit (git checkout of the file): the next run repairs.
	os.WriteFile(p, orig, 0o644)
	f.stage(t, "packages/tiny/1.1.0/manifest.yaml")
	res, log, err = f.runOpts(t, nil)
	if err != nil || res.Commit == "" {
		t.Fatalf("clean run after --allow-dirty: %v, commit %q\n%s", err, res.Commit, log)
	}
	if got := treeOf(t, f.catalog); got != clean {
		t.Errorf("the clean run left tree %s, the first clean publish %s:\n%s", got, clean, catalogFileOf(t, f.catalog, "publish/state/global.yaml"))
	}
	if res, _, err := f.runOpts(t, nil); err != nil || res.Commit != "" {
		t.Errorf("a second clean run: %v, commit %q, want nothing to do", err, res.Commit)
	}
}

// TestRunDivergedLine: a run from a branch that lacks the commit the
// catalog was published from (neither contains the other) stops with an
// input error and writes nothing; --base publishes over it, and so does a
// proven rewrite (no ref of origin reaches the published commit).
func TestRunDivergedLine(t *testing.T) {
	setup := func(t *testing.T) (*fixture, plumbing.Hash, plumbing.Hash) {
		f := newFixture(t)
		head, _ := f.repo.Head()
		first := head.Hash()
		f.addVersion(t, "1.2.0")
		f.run(t) // published from the commit with 1.2.0
		head, _ = f.repo.Head()
		published := head.Hash()
		wt, _ := f.repo.Worktree()
		if err := wt.Checkout(gitCheckout{Branch: "refs/heads/other", Create: true, Hash: first}.opts()); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(f.source, "README.md"), []byte("another line\n"), 0o644)
		f.commit(t, "another line")
		return f, first, published
	}
	t.Run("refused", func(t *testing.T) {
		f, _, published := setup(t)
		// origin still has the published commit (main).
		if err := f.repo.Storer.SetReference(plumbing.NewHashReference("refs/remotes/origin/main", published)); err != nil {
			t.Fatal(err)
		}
		before := treeOf(t, f.catalog)
		_, log, err := f.runOpts(t, nil)
		var de *DivergedError
		if !errors.As(err, &de) || !errors.As(err, new(*InputError)) || !strings.Contains(err.Error(), "--base") {
			t.Fatalf("run on another line: %v, want a DivergedError (input)\n%s", err, log)
		}
		if treeOf(t, f.catalog) != before {
			t.Errorf("the refused run changed the catalog")
		}
	})
	t.Run("base", func(t *testing.T) {
		f, first, _ := setup(t)
		res, log, err := f.runOpts(t, func(o *Options) { o.Base = first.String() })
		if err != nil || res.Commit == "" || !strings.Contains(log, "because --base was given") {
			t.Fatalf("--base: %v, commit %q\n%s", err, res.Commit, log)
		}
	})
	t.Run("rewrite", func(t *testing.T) {
		f, _, _ := setup(t)
		head, _ := f.repo.Head()
		if err := f.repo.Storer.SetReference(plumbing.NewHashReference("refs/remotes/origin/main", head.Hash())); err != nil {
			t.Fatal(err)
		}
		res, log, err := f.runOpts(t, nil)
		if err != nil || res.Commit == "" || !strings.Contains(log, "history rewritten") {
			t.Fatalf("proven rewrite: %v, commit %q\n%s", err, res.Commit, log)
		}
	})
}
