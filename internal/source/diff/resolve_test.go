package diff

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestResolveBase: the base alone, as Compute finds it: the merge base
// with the target branch in pull-request mode, --base as given; a repo
// with no packages directory is fine.
func TestResolveBase(t *testing.T) {
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	n := 0
	commit := func() plumbing.Hash {
		n++
		os.WriteFile(filepath.Join(dir, "f"), []byte{byte('a' + n)}, 0o644)
		wt.AddWithOptions(&git.AddOptions{All: true})
		h, err := wt.Commit("c", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000+int64(n), 0)}})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	first := commit()
	if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName("pr"), Create: true}); err != nil {
		t.Fatal(err)
	}
	commit()
	head := commit()
	none := func(string) string { return "" }
	res, err := ResolveBase(context.Background(), Options{Repo: dir, PR: true, TargetBranch: "master", Getenv: none})
	if err != nil || res.Base != first.String() || res.Head != head.String() || res.BaseFrom != FromMergeBase || len(res.Changes) != 0 {
		t.Errorf("PR mode: %+v %v", res, err)
	}
	res, err = ResolveBase(context.Background(), Options{Repo: dir, Base: "HEAD~1", Getenv: none})
	if err != nil || res.Base == "" || res.Base == first.String() || res.BaseFrom != FromFlag {
		t.Errorf("--base HEAD~1: %+v %v", res, err)
	}
	res, err = ResolveBase(context.Background(), Options{Repo: dir, PR: true, Getenv: none})
	if err != nil || !res.All || res.Base != "" {
		t.Errorf("PR mode without a target branch: %+v %v", res, err)
	}
}
