package catalog

import (
	"fmt"
	"path/filepath"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// OpenRev opens one commit of a local Git repo as a read-only View of
// Git objects: rev (a commit hash, a branch, a tag, HEAD~1, anything
// go-git resolves) of the repo that contains dir (found upward; a working
// tree or a bare repo), rooted at prefix (the catalog's directory in the
// repo, "" for the root). Nothing is fetched, checked out or written:
// `publish check` reads the base of a pull request this way. The Tip it
// returns has no remote: it must not Push. Errors: dir is in no Git repo,
// rev does not resolve to a commit (both name them), a bad prefix.
func OpenRev(dir, prefix, rev string) (*Tip, error) {
	sub, err := cleanPrefix(prefix)
	if err != nil {
		return nil, err
	}
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("%s is not inside a Git repository: %w", dir, err)
	}
	h, err := repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, fmt.Errorf("revision %q of the repo at %s: %w", rev, dir, err)
	}
	t := &Tip{prefix: sub, store: NewOverlay(repo.Storer)}
	if err := t.setHead(*h); err != nil {
		return nil, fmt.Errorf("revision %q (%s) of the repo at %s: %w", rev, h, dir, err)
	}
	return t, nil
}

// cleanPrefix checks a catalog prefix given as a slash or OS path.
func cleanPrefix(p string) (string, error) {
	p = filepath.ToSlash(p)
	if p == "" || p == "." {
		return "", nil
	}
	if err := checkPath(p); err != nil {
		return "", err
	}
	return p, nil
}
