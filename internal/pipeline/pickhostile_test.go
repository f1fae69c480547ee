package pipeline

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/testenv"
)

// pickedPaths is the manifest paths of what pickVersions picked.
func pickedPaths(pk *picked) []string {
	var out []string
	if pk == nil {
		return nil
	}
	for _, v := range pk.selected {
		out = append(out, v.Manifest.Path)
	}
	return out
}

// TestPickPaths: a PATH of package or mirror names files below --source
// as lint's do: absolute or relative to --source, ".." inside it
// allowed; a PATH outside --source (by "..", or absolute) is a
// *PathError naming it, not a selection of nothing (which mirror would
// take for nothing to do), as is one below it that holds no manifest; a
// link out of the package repo is refused.
func TestPickPaths(t *testing.T) {
	f := newFixture(t)
	elsewhere := t.TempDir()
	if err := os.CopyFS(elsewhere, os.DirFS(filepath.Join(f.source, "packages"))); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(f.source, elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(f.source, "packages/tiny"), "packages/tiny/../tiny", "./packages/tiny/"} {
		pk, err := pickVersions(t.Context(), pickOptions{Source: f.source, Paths: []string{p}})
		if err != nil || len(pk.selected) != 2 {
			t.Errorf("PATH %s: %v, picked %v; want both versions of tiny", p, err, pickedPaths(pk))
		}
	}
	for _, p := range []string{rel, rel + "/tiny", "packages/../..", elsewhere} {
		pk, err := pickVersions(t.Context(), pickOptions{Source: f.source, Paths: []string{p}})
		var pe *PathError
		if !errors.As(err, &pe) || pe.Path != p || !strings.Contains(err.Error(), "outside --source") {
			t.Errorf("PATH %s: %v (picked %v); want a *PathError: outside --source", p, err, pickedPaths(pk))
		}
	}
	// A PATH below --source that holds no manifest picks nothing either.
	if err := os.MkdirAll(filepath.Join(f.source, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := pickVersions(t.Context(), pickOptions{Source: f.source, Paths: []string{"docs"}}); err == nil || !strings.Contains(err.Error(), "docs: no manifest.yaml") {
		t.Errorf("PATH docs: %v, want a *PathError: no manifest.yaml below it", err)
	}
	// A link in the package repo (here to a directory outside it) is
	// refused by the scan, whatever the PATH.
	if err := os.Symlink(elsewhere, filepath.Join(f.source, "away")); err != nil {
		t.Fatal(err)
	}
	if _, err := pickVersions(t.Context(), pickOptions{Source: f.source, Paths: []string{"away/tiny"}}); err == nil || !strings.Contains(err.Error(), "symbolic link") && !strings.Contains(err.Error(), "outside --source") {
		t.Errorf("PATH through a link out of the package repo: %v, want the link refused", err)
	}
}

// TestPickChangedOutsideGit: --changed in a package repo that is no Git
// repository is an error naming the flag.
func TestPickChangedOutsideGit(t *testing.T) {
	f := newFixture(t)
	plain := t.TempDir()
	if err := os.CopyFS(filepath.Join(plain, "packages"), os.DirFS(filepath.Join(f.source, "packages"))); err != nil {
		t.Fatal(err)
	}
	_, err := pickVersions(t.Context(), pickOptions{Source: plain, Changed: true, Flag: "--changed", NoFetch: true})
	if err == nil || !strings.Contains(err.Error(), "--changed") {
		t.Errorf("pickVersions --changed outside Git: %v, want an error naming --changed", err)
	}
}

// TestPickLinkedWorktree: a linked worktree (git worktree add: .git is a
// file) is a package repo like any clone: its versions are picked, and
// change detection against a base commit finds what changed since.
func TestPickLinkedWorktree(t *testing.T) {
	git := testenv.Require(t, "git", "git")
	f := newFixture(t)
	run := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command(git, append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	base := run(f.source, "rev-parse", "HEAD")
	wt := filepath.Join(t.TempDir(), "wt")
	run(f.source, "worktree", "add", "-q", "-b", "feature", wt)
	pk, err := pickVersions(t.Context(), pickOptions{Source: wt})
	if err != nil || len(pk.selected) != 2 {
		t.Fatalf("pickVersions in a linked worktree: %v, picked %v", err, pickedPaths(pk))
	}
	m := filepath.Join(wt, "packages/tiny/1.1.0/manifest.yaml")
	data, err := os.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m, []byte(strings.Replace(string(data), "displayName: Tiny", "displayName: Tiny Two", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	run(wt, "commit", "-q", "-am", "edit 1.1.0")
	pk, err = pickVersions(t.Context(), pickOptions{Source: wt, Changed: true, Base: base, NoFetch: true, Flag: "--changed"})
	if err != nil {
		t.Fatalf("pickVersions --changed in a linked worktree: %v", err)
	}
	if got := pickedPaths(pk); len(got) != 1 || got[0] != "packages/tiny/1.1.0/manifest.yaml" {
		t.Errorf("changed since %s in the worktree: %v, want packages/tiny/1.1.0/manifest.yaml", base, got)
	}
}

// TestMirrorPathOutsideSource: `publish mirror ../elsewhere` (a PATH
// outside --source) fails, rather than mirror nothing and succeed.
func TestMirrorPathOutsideSource(t *testing.T) {
	f := newFixture(t)
	elsewhere := t.TempDir()
	if err := os.CopyFS(elsewhere, os.DirFS(filepath.Join(f.source, "packages"))); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(f.source, elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Mirror(t.Context(), MirrorOptions{Source: f.source, Paths: []string{rel}, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}})
	if err == nil {
		t.Errorf("mirror %s succeeded (%d versions mirrored), want a *PathError", rel, res.Versions)
	}
}
