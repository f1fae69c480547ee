package catalog

import (
	"path/filepath"
	"testing"
)

// TestOpenDirLinkedWorktree: a catalog checked out as a linked worktree
// (git worktree add: .git is a file, the refs are in the main repo) has
// the head of its branch, as a clone does; without it publish check
// finds no base and counts every rendered object as added.
func TestOpenDirLinkedWorktree(t *testing.T) {
	bare := newBare(t)
	head := seed(t, bare, "main", catalogFiles())
	wt := filepath.Join(t.TempDir(), "wt")
	run(t, ".", "clone", "-q", bare, wt)
	linked := filepath.Join(t.TempDir(), "linked")
	run(t, wt, "worktree", "add", "-q", "-b", "feature", linked)
	for _, dir := range []string{linked, filepath.Join(linked, "rendered")} {
		d, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if d.Head() != head {
			t.Errorf("OpenDir(%s).Head() = %q, want %s", dir, d.Head(), head)
		}
	}
}
