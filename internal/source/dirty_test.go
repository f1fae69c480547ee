package source

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/operator-publish/publish/internal/testenv"
)

func writeFile(t *testing.T, dir, p, s string) {
	t.Helper()
	full := filepath.Join(dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// initRepo makes a package repo with three manifests and a README, committed
// by go-git, with its directories older than its index.
func initRepo(t *testing.T) (string, *git.Worktree) {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"packages/a/1.0.0/manifest.yaml", "packages/a/1.1.0/manifest.yaml", "packages/b/1.0.0/manifest.yaml", "README.md"} {
		writeFile(t, dir, p, "kind: PackageManifest # "+p+"\n")
	}
	wt, _ := repo.Worktree()
	if err := wt.AddGlob("."); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit("init", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	filepath.WalkDir(filepath.Join(dir, "packages"), func(p string, d os.DirEntry, err error) error {
		return os.Chtimes(p, past, past)
	})
	return dir, wt
}

func checkDirty(t *testing.T, dir, name string, want []string, wantSuspect string) {
	t.Helper()
	r, err := Open(dir)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	got, err := r.Dirty(filepath.Join(dir, "packages"))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if strings.Join(got.Paths, ",") != strings.Join(want, ",") || got.Suspect != wantSuspect {
		t.Errorf("%s: dirty %v suspect %q, want %v %q", name, got.Paths, got.Suspect, want, wantSuspect)
	}
}

// TestDirty: uncommitted edits, new files in new and in known directories,
// and paths named like a manifest that are not one are found by stat
// against the index, as Git finds them; a clean checkout has none.
func TestDirty(t *testing.T) {
	dir, _ := initRepo(t)
	checkDirty(t, dir, "clean", nil, "")

	writeFile(t, dir, "packages/a/1.0.0/manifest.yaml", "kind: PackageManifest # edited\n")
	checkDirty(t, dir, "edited", []string{"packages/a/1.0.0/manifest.yaml"}, "")

	writeFile(t, dir, "packages/a/1.2.0/manifest.yaml", "new version\n")
	writeFile(t, dir, "packages/c/1.0.0/manifest.yaml", "new artifact\n")
	checkDirty(t, dir, "new files", []string{"packages/a/1.0.0/manifest.yaml", "packages/a/1.2.0/manifest.yaml", "packages/c/1.0.0/manifest.yaml"}, "")

	os.Remove(filepath.Join(dir, "packages/b/1.0.0/manifest.yaml"))
	os.Mkdir(filepath.Join(dir, "packages/b/1.0.0/manifest.yaml"), 0o755)
	checkDirty(t, dir, "a directory named manifest.yaml", []string{"packages/a/1.0.0/manifest.yaml", "packages/a/1.2.0/manifest.yaml", "packages/c/1.0.0/manifest.yaml"}, "packages/b/1.0.0/manifest.yaml")
}

// TestDirtyStaged: a manifest that is added to the index (git add) but not
// committed differs from HEAD: an edit and a new file, each staged, are
// dirty, as they are unstaged; a staged edit reverted on disk to HEAD's
// content is clean.
func TestDirtyStaged(t *testing.T) {
	dir, wt := initRepo(t)
	writeFile(t, dir, "packages/a/1.0.0/manifest.yaml", "kind: PackageManifest # staged edit\n")
	writeFile(t, dir, "packages/d/1.0.0/manifest.yaml", "kind: PackageManifest # staged new\n")
	for _, p := range []string{"packages/a/1.0.0/manifest.yaml", "packages/d/1.0.0/manifest.yaml"} {
		if _, err := wt.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	checkDirty(t, dir, "staged", []string{"packages/a/1.0.0/manifest.yaml", "packages/d/1.0.0/manifest.yaml"}, "")

	writeFile(t, dir, "packages/a/1.0.0/manifest.yaml", "kind: PackageManifest # packages/a/1.0.0/manifest.yaml\n")
	checkDirty(t, dir, "staged, then reverted on disk", []string{"packages/d/1.0.0/manifest.yaml"}, "")
}

// TestDirtyGitCommand: the same with an index written by Git itself (with
// its cache tree), in a subdirectory source, and in a linked worktree (git
// worktree add), whose .git is a file.
func TestDirtyGitCommand(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Skip(t, "git is not installed")
	}
	dir, _ := initRepo(t)
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(dir, "reset", "-q", "--hard")
	checkDirty(t, dir, "git: clean", nil, "")
	writeFile(t, dir, "packages/b/1.0.0/manifest.yaml", "kind: PackageManifest # staged by git\n")
	git(dir, "add", "packages/b/1.0.0/manifest.yaml")
	checkDirty(t, dir, "git: staged", []string{"packages/b/1.0.0/manifest.yaml"}, "")
	git(dir, "commit", "-q", "-m", "b")

	linked := filepath.Join(t.TempDir(), "linked")
	git(dir, "worktree", "add", "-q", linked)
	checkDirty(t, linked, "linked worktree: clean", nil, "")
	writeFile(t, linked, "packages/a/1.1.0/manifest.yaml", "kind: PackageManifest # linked edit\n")
	checkDirty(t, linked, "linked worktree: edited", []string{"packages/a/1.1.0/manifest.yaml"}, "")
	r, err := Open(linked)
	if err != nil || r.Head() == "" {
		t.Fatalf("linked worktree: head %q: %v", r.Head(), err)
	}
}
