// Package source is the package repo of a run, opened once
// (docs/design.md#change-detection): its HEAD and origin, the manifests
// that differ from HEAD (Dirty: edited, staged or new, one detector for
// every command), and where a published source commit stands against HEAD
// (Relation). Change detection between two commits is its subpackage diff,
// which reads the same opened repository.
//
// The repository is opened with go-git's common-dir support, so that a
// linked worktree (`git worktree add`) and a submodule checkout, whose .git
// is a file naming the real Git directory, read the objects, refs and index
// Git itself reads.
package source

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/operator-publish/publish/internal/redact"
)

// Repo is the package repo: the Git repository around one directory
// (--source). A directory outside any Git repository is a Repo too, with
// IsGit false: commands that need no history (lint of files, render) work
// on it, and those that need one say so through their own errors.
type Repo struct {
	// dir is the --source directory, absolute with symbolic links
	// resolved; top the worktree root; prefix dir relative to top,
	// slash-separated with a trailing '/', "" when they are the same.
	dir, top, prefix string
	git              *git.Repository
	// openErr is why dir is not a Git repository (IsGit false).
	openErr error
}

// opens counts the go-git opens of a package repo in this process (Open and
// Reopen), for the benchmark that checks a run opens it once.
var opens atomic.Int64

// Opens returns how many times a package repo was opened in this process.
func Opens() int64 { return opens.Load() }

// PlainOpen opens the Git repository around dir the way every reader of the
// package repo must: found upward from dir, with a linked worktree's or a
// submodule's common Git directory. It counts towards Opens. Errors are
// go-git's (git.ErrRepositoryNotExists when there is none).
func PlainOpen(dir string) (*git.Repository, error) {
	opens.Add(1)
	return git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
}

// Open opens the package repo around dir. A dir that is not inside a Git
// repository is not an error (IsGit reports it); errors are for a dir that
// cannot be resolved, a repository that cannot be read, or a dir outside
// its repository's worktree.
func Open(dir string) (*Repo, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if d, err := filepath.EvalSymlinks(abs); err == nil {
		abs = d
	}
	r := &Repo{dir: abs, top: abs}
	repo, err := PlainOpen(abs)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		r.openErr = fmt.Errorf("%s is not inside a Git repository: %w", dir, err)
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening the package repo %s: %w", dir, err)
	}
	r.git = repo
	wt, err := repo.Worktree()
	if errors.Is(err, git.ErrIsBareRepository) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening the worktree of the package repo %s: %w", dir, err)
	}
	top, err := filepath.EvalSymlinks(wt.Filesystem.Root())
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("%s is not inside its Git worktree %s", dir, top)
	}
	r.top = top
	if rel != "." {
		r.prefix = filepath.ToSlash(rel) + "/"
	}
	return r, nil
}

// IsGit reports whether the directory is inside a Git repository.
func (r *Repo) IsGit() bool { return r != nil && r.git != nil }

// NotGit is why the directory is not a Git repository (nil when it is).
func (r *Repo) NotGit() error { return r.openErr }

// Git is the opened repository (nil when IsGit is false).
func (r *Repo) Git() *git.Repository { return r.git }

// Reopen opens the repository again, after a fetch by the git command wrote
// packfiles and refs go-git has not seen. It counts towards Opens.
func (r *Repo) Reopen() error {
	if r.git == nil {
		return r.openErr
	}
	repo, err := PlainOpen(r.dir)
	if err != nil {
		return err
	}
	r.git = repo
	return nil
}

// Dir is the --source directory, absolute.
func (r *Repo) Dir() string { return r.dir }

// Top is the root of the worktree (dir itself outside Git).
func (r *Repo) Top() string { return r.top }

// Prefix is Dir relative to Top, slash-separated with a trailing '/', ""
// when Dir is the root: the prefix of Dir's files in Git's paths.
func (r *Repo) Prefix() string { return r.prefix }

// Head returns the HEAD commit's hash, "" when there is none (not a Git
// repository, or no commit yet).
func (r *Repo) Head() string {
	if r.git == nil {
		return ""
	}
	h, err := r.git.Head()
	if err != nil {
		return ""
	}
	return h.Hash().String()
}

// Origin returns the URL of the remote "origin" with any user information
// removed (RedactURL), "" when there is none.
func (r *Repo) Origin() string {
	if r.git == nil {
		return ""
	}
	rm, err := r.git.Remote("origin")
	if err != nil || len(rm.Config().URLs) == 0 {
		return ""
	}
	return RedactURL(rm.Config().URLs[0])
}

// HasCommit reports whether the object store holds commit h.
func (r *Repo) HasCommit(h string) bool {
	if r.git == nil || h == "" {
		return false
	}
	_, err := r.git.CommitObject(plumbing.NewHash(h))
	return err == nil
}

// RedactURL returns u without its user information (redact.URL: a user
// and password, a token given as the user, or a user alone).
func RedactURL(u string) string { return redact.URL(u) }
