package source

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Relation is where a published source commit stands against ours.
type Relation int

// The relations Relate returns.
const (
	// Same: the catalog was published from our commit.
	Same Relation = iota
	// Behind: the published commit is a proper ancestor of ours, the usual
	// case: ours publishes what changed since.
	Behind
	// Ahead: the published commit contains ours: a newer run published
	// already.
	Ahead
	// Diverged: neither contains the other: ours is on another line of
	// history (a branch that lacks the published commit, or history
	// rewritten after the publish).
	Diverged
	// Unknown: the package repo does not have the published commit, even
	// after a fetch from origin.
	Unknown
)

// FetchTimeout bounds the fetch of one commit by Relate.
const FetchTimeout = time.Minute

// Relate says where theirs (a published source commit) stands against ours
// (both full hashes). A commit the checkout lacks is fetched by hash from
// origin first when fetch is true (servers that allow it: GitHub, GitLab,
// Git over protocol v2). Ancestry is tried the cheap way first: a walk from
// ours that stops at theirs. Outside a Git repository, with either hash
// empty, or when ours is not in the repository (push --catalog, whose
// source commit is the archive's), there is nothing to compare: Same.
func (r *Repo) Relate(ctx context.Context, ours, theirs string, fetch bool) Relation {
	if r.git == nil || ours == "" || theirs == "" || ours == theirs {
		return Same
	}
	oc, err := r.git.CommitObject(plumbing.NewHash(ours))
	if err != nil {
		return Same
	}
	th := plumbing.NewHash(theirs)
	tc, err := r.git.CommitObject(th)
	if err != nil && fetch {
		if ferr := r.fetchCommit(ctx, th); ferr == nil {
			tc, err = r.git.CommitObject(th)
		}
	}
	if err != nil {
		return Unknown
	}
	if ok, err := tc.IsAncestor(oc); err == nil && ok {
		return Behind
	}
	if ok, err := oc.IsAncestor(tc); err == nil && ok {
		return Ahead
	}
	return Diverged
}

// Shallow reports whether the clone's history is cut off (a shallow clone).
func (r *Repo) Shallow() bool {
	if r.git == nil {
		return false
	}
	s, _ := r.git.Storer.Shallow()
	return len(s) > 0
}

// ReachableFromOrigin reports whether commit h is in the history of any
// remote-tracking ref of origin (refs/remotes/origin/*), as the last fetch
// left them: false proves that origin no longer has it (history rewritten
// by a force push) only when there is at least one such ref, which ok
// reports.
func (r *Repo) ReachableFromOrigin(h string) (reachable, ok bool) {
	if r.git == nil {
		return false, false
	}
	refs, err := r.git.References()
	if err != nil {
		return false, false
	}
	defer refs.Close()
	target := plumbing.NewHash(h)
	var tips []*object.Commit
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		if !strings.HasPrefix(ref.Name().String(), "refs/remotes/origin/") || ref.Type() != plumbing.HashReference {
			return nil
		}
		if c, err := r.git.CommitObject(ref.Hash()); err == nil {
			tips = append(tips, c)
		}
		return nil
	})
	if len(tips) == 0 {
		return false, false
	}
	tc, err := r.git.CommitObject(target)
	if err != nil {
		return false, true // not even in the clone, which has origin's refs
	}
	for _, c := range tips {
		if c.Hash == target {
			return true, true
		}
		if yes, err := tc.IsAncestor(c); err == nil && yes {
			return true, true
		}
	}
	return false, true
}

// fetchCommit fetches one commit by hash from origin under FetchTimeout,
// into a temporary ref that is removed again.
func (r *Repo) fetchCommit(ctx context.Context, h plumbing.Hash) error {
	if _, err := r.git.Remote("origin"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	tmp := plumbing.ReferenceName("refs/publish/superseded")
	err := r.git.FetchContext(ctx, &git.FetchOptions{
		RemoteName: "origin",
		RefSpecs:   []config.RefSpec{config.RefSpec(h.String() + ":" + tmp.String())},
		Tags:       git.NoTags,
	})
	_ = r.git.Storer.RemoveReference(tmp)
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}
