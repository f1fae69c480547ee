package prune

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// StaleError says the catalog checkout --apply would read is behind its
// origin: what was listed again since the plan would not be seen.
type StaleError struct {
	Dir, Branch, Head, Origin string
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("--catalog-dir %s is at %s, origin's %s at %s: pull it (git -C %s pull) so that --apply sees what is listed now, or give --catalog to read the catalog branch's tip; nothing was deleted", e.Dir, short(e.Head), e.Branch, short(e.Origin), e.Dir)
}

// checkFresh asks the checkout's origin (its advertised references, no
// fetch: the checkout is not changed) where the checked-out branch is,
// and returns a *StaleError when the checkout is neither there nor ahead
// of it. A checkout without an origin (a local catalog) is current; an
// origin that does not answer (credentials, network) returns that error
// for the caller to warn about.
func checkFresh(ctx context.Context, catalogDir string) error {
	dir, err := filepath.Abs(catalogDir)
	if err != nil {
		return err
	}
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return err
	}
	head, err := repo.Head()
	if err != nil || !head.Name().IsBranch() {
		return err
	}
	origin, err := repo.Remote("origin")
	if err != nil {
		return nil // no origin: nothing to pull from
	}
	refs, err := origin.ListContext(ctx, &git.ListOptions{})
	if err != nil {
		return fmt.Errorf("asking origin where %s is: %w", head.Name().Short(), err)
	}
	for _, r := range refs {
		if r.Name() != head.Name() || r.Hash() == head.Hash() {
			continue
		}
		if ahead(repo, head.Hash(), r.Hash()) {
			return nil
		}
		return &StaleError{Dir: catalogDir, Branch: head.Name().Short(), Head: head.Hash().String(), Origin: r.Hash().String()}
	}
	return nil
}

// ahead reports whether commit at descends from (or is) base, as far as
// the repository has the objects.
func ahead(repo *git.Repository, at, base plumbing.Hash) bool {
	c, err := repo.CommitObject(at)
	if err != nil {
		return false
	}
	b, err := repo.CommitObject(base)
	if err != nil {
		return false // the checkout lacks origin's commit: behind
	}
	ok, err := b.IsAncestor(c)
	return err == nil && ok
}
