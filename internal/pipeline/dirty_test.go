package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestDirtyManifests: uncommitted edits, new files in new and in known
// directories, and paths named like a manifest that are not one are
// found by stat against the index, as Git finds them; a clean checkout
// has none.
func TestDirtyManifests(t *testing.T) {
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		t.Helper()
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"packages/a/1.0.0/manifest.yaml", "packages/a/1.1.0/manifest.yaml", "packages/b/1.0.0/manifest.yaml", "README.md"} {
		write(p, "kind: PackageManifest # "+p+"\n")
	}
	wt, _ := repo.Worktree()
	if err := wt.AddGlob("."); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit("init", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	// The index is written after the files: directories are older.
	past := time.Now().Add(-time.Hour)
	filepath.WalkDir(filepath.Join(dir, "packages"), func(p string, d os.DirEntry, err error) error {
		return os.Chtimes(p, past, past)
	})
	root := filepath.Join(dir, "packages")
	check := func(name string, want []string, wantSuspect string) {
		t.Helper()
		got, suspect, err := dirtyManifests(dir, "", root)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") || suspect != wantSuspect {
			t.Errorf("%s: dirty %v suspect %q, want %v %q", name, got, suspect, want, wantSuspect)
		}
	}
	check("clean", nil, "")

	write("packages/a/1.0.0/manifest.yaml", "kind: PackageManifest # edited\n")
	check("edited", []string{"packages/a/1.0.0/manifest.yaml"}, "")

	write("packages/a/1.2.0/manifest.yaml", "new version\n")
	write("packages/c/1.0.0/manifest.yaml", "new artifact\n")
	check("new files", []string{"packages/a/1.0.0/manifest.yaml", "packages/a/1.2.0/manifest.yaml", "packages/c/1.0.0/manifest.yaml"}, "")

	os.Remove(filepath.Join(dir, "packages/b/1.0.0/manifest.yaml"))
	os.Mkdir(filepath.Join(dir, "packages/b/1.0.0/manifest.yaml"), 0o755)
	got, suspect, err := dirtyManifests(dir, "", root)
	if err != nil || suspect != "packages/b/1.0.0/manifest.yaml" {
		t.Errorf("a directory named manifest.yaml: dirty %v suspect %q (%v)", got, suspect, err)
	}
}
