package pipeline

import (
	"path/filepath"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/operator-publish/publish/internal/manifest"
)

// dirtyFiles returns the manifest files (paths as in files, relative to
// source) whose content differs from the package repo's HEAD commit:
// uncommitted edits and new, untracked files. Change detection compares
// commits, so these are added to what counts as changed; a run from a
// dirty checkout then still mirrors what it publishes. Not a Git repo, or
// no HEAD: nil.
func dirtyFiles(source string, files []manifest.File) map[string]bool {
	repo, err := git.PlainOpenWithOptions(source, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil
	}
	head, err := repo.Head()
	if err != nil {
		return nil
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		return nil
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil
	}
	absSource, err := filepath.Abs(source)
	if err != nil {
		return nil
	}
	root := wt.Filesystem.Root()
	dirty := map[string]bool{}
	for _, f := range files {
		rel, err := filepath.Rel(root, filepath.Join(absSource, filepath.FromSlash(f.Path)))
		if err != nil {
			continue
		}
		entry, err := tree.FindEntry(filepath.ToSlash(rel))
		if err != nil || entry.Hash != plumbing.ComputeHash(plumbing.BlobObject, f.Data) {
			dirty[f.Path] = true
		}
	}
	return dirty
}
