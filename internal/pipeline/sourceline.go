package pipeline

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/source"
)

// sourceOnce opens the package repo once for every copy of the Options
// of one command (the clusters of a run each get a copy: forCluster).
type sourceOnce struct {
	once sync.Once
	repo *source.Repo
	err  error
}

// sourceRepo is the package repo (Options.Source), opened at the first
// call and shared by every copy of these Options made after defaults.
func (o *Options) sourceRepo() (*source.Repo, error) {
	if o.src == nil {
		o.src = &sourceOnce{}
	}
	o.src.once.Do(func() { o.src.repo, o.src.err = source.Open(o.Source) })
	return o.src.repo, o.src.err
}

// supersededBy reports whether the catalog, published from source commit
// theirs, is ahead of our source commit ours (source.Relate): ours is a
// proper ancestor of theirs, and a newer run published already. A commit
// the checkout lacks is fetched from origin first (unless --no-fetch).
// When ours and theirs are on two lines of history, or theirs is unknown
// in a complete clone, the run stops with a *DivergedError (nothing is
// written), unless --base was given or the history was provably rewritten
// (origin's refs no longer reach theirs): then ours publishes, with a
// warning. A shallow clone that lacks theirs publishes with a warning.
func supersededBy(ctx context.Context, o Options, ours, theirs string) (bool, string, error) {
	repo, err := o.sourceRepo()
	if err != nil || !repo.IsGit() {
		return false, "", err
	}
	switch repo.Relate(ctx, ours, theirs, !o.NoFetch) {
	case source.Ahead:
		return true, fmt.Sprintf("the catalog was published from source commit %s, which already contains %s", report.ShortCommit(theirs), report.ShortCommit(ours)), nil
	case source.Unknown:
		if repo.Shallow() || o.Base != "" {
			o.warnf("the catalog was published from source commit %s, which this clone does not have: cannot tell whether it is newer; publishing %s", report.ShortCommit(theirs), report.ShortCommit(ours))
			return false, "", nil
		}
		return false, "", inputErr(&DivergedError{Ours: ours, Theirs: theirs, Unknown: true})
	case source.Diverged:
		if o.Base != "" {
			o.warnf("the catalog was published from source commit %s, which is not in the history of %s: publishing over it because --base was given", report.ShortCommit(theirs), report.ShortCommit(ours))
			return false, "", nil
		}
		if reachable, ok := repo.ReachableFromOrigin(theirs); ok && !reachable {
			o.warnf("the catalog was published from source commit %s, which no ref of origin reaches any more (history rewritten): publishing %s over it", report.ShortCommit(theirs), report.ShortCommit(ours))
			return false, "", nil
		}
		return false, "", inputErr(&DivergedError{Ours: ours, Theirs: theirs})
	}
	return false, "", nil
}

// DirtyError is a run of a package repo whose manifests differ from its
// HEAD commit (Paths, relative to --source): publishing them would record
// HEAD as the source of content that is in no commit. An input error (exit
// 1); --allow-dirty publishes them.
type DirtyError struct {
	Paths []string
}

func (e *DirtyError) Error() string {
	list := e.Paths
	more := ""
	if len(list) > 5 {
		list, more = list[:5], fmt.Sprintf(" and %d more", len(e.Paths)-5)
	}
	return fmt.Sprintf("%d manifest files differ from the package repo's HEAD (uncommitted or staged changes): %s%s; commit them, or pass --allow-dirty to publish them as they are on disk (the next run reads them again)", len(e.Paths), strings.Join(list, ", "), more)
}

// checkDirty stops a run whose package repo has dirty manifests (a
// *DirtyError, an input error) unless Options.AllowDirty.
func checkDirty(o Options, dirty map[string]bool) error {
	if len(dirty) == 0 || o.AllowDirty {
		return nil
	}
	paths := make([]string, 0, len(dirty))
	for p := range dirty {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return inputErr(&DirtyError{Paths: paths})
}

// DivergedError is a run whose source commit (Ours) is on another line of
// history than the one the catalog was published from (Theirs): a branch
// that lacks the published commit, or a clone that does not have it.
// Publishing would delist what the other line listed, so nothing is
// written. It is an input error (exit 1); --base overrides it.
type DivergedError struct {
	Ours, Theirs string
	// Unknown: the package repo does not have Theirs at all.
	Unknown bool
}

func (e *DivergedError) Error() string {
	where := "on another line of history than " + report.ShortCommit(e.Ours) + " (another branch, or the package repo's history was rewritten)"
	if e.Unknown {
		where = "which is not in the history of " + report.ShortCommit(e.Ours) + " (it is newer, or on another line; this clone does not have it)"
	}
	return fmt.Sprintf("the catalog was published from source commit %s, %s: nothing was written; run from a checkout that contains it, or, if the package repo's history was rewritten, publish once with --base to overwrite it", report.ShortCommit(e.Theirs), where)
}
