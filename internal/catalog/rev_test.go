package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestOpenRev: an older commit of a local repo read as a View below a
// prefix, from Git objects; a revision that does not resolve names it.
func TestOpenRev(t *testing.T) {
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	commit := func(content string) {
		os.MkdirAll(filepath.Join(dir, "cat/rendered/global"), 0o755)
		os.WriteFile(filepath.Join(dir, "cat/rendered/global/a.yaml"), []byte(content), 0o644)
		wt.AddWithOptions(&git.AddOptions{All: true})
		if _, err := wt.Commit(content, &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0)}}); err != nil {
			t.Fatal(err)
		}
	}
	commit("one\n")
	commit("two\n")
	v, err := OpenRev(filepath.Join(dir, "cat"), "cat", "HEAD~1")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	files, err := v.Files("rendered", nil)
	if err != nil || len(files) != 1 || string(files["rendered/global/a.yaml"]) != "one\n" {
		t.Errorf("files at HEAD~1: %v %v", files, err)
	}
	if _, err := OpenRev(dir, "", "no-such-branch"); err == nil || !strings.Contains(err.Error(), "no-such-branch") {
		t.Errorf("bad revision: %v", err)
	}
	if _, err := OpenRev(dir, "../x", "HEAD"); err == nil {
		t.Error("a prefix outside the repo is accepted")
	}
}
