package diff

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// depthHint tells CI users how to give the job the history it needs.
const depthHint = "check out the full history: `fetch-depth: 0` in actions/checkout (GitHub), `GIT_DEPTH: 0` (GitLab CI), or let publish fetch it from origin"

// baseSpec is where the base comes from, before it is resolved.
type baseSpec struct {
	from   string // FromFlag, FromMergeBase, FromCI, FromState, FromNone
	rev    string // FromFlag, FromCI, FromState: the revision
	branch string // FromMergeBase: the target branch
	via    string // for messages: "--base", "GITHUB_BASE_REF", ...
	warn   string // FromNone: why there is no base when that is a problem
}

// problem is a base that cannot be used (yet).
type problem struct {
	msg       string
	fetchable bool          // fetching from origin may solve it
	hash      plumbing.Hash // a commit to fetch by hash (zero: none)
	fetchErr  error
}

func (p *problem) message(fetchAllowed bool) string {
	s := p.msg + ": every version counts as changed"
	if !p.fetchable {
		return s
	}
	switch {
	case p.fetchErr != nil:
		s += fmt.Sprintf(" (fetching from origin failed: %v)", p.fetchErr)
	case !fetchAllowed:
		s += " (fetching from origin is not enabled)"
	}
	return s + "; " + depthHint
}

// spec decides where the base comes from.
func (c *computer) spec() baseSpec {
	if b := strings.TrimSpace(c.o.Base); b != "" {
		return baseSpec{from: FromFlag, rev: b, via: "--base"}
	}
	if c.o.PR {
		if b := strings.TrimSpace(c.o.TargetBranch); b != "" {
			return baseSpec{from: FromMergeBase, branch: b, via: "--target-branch " + b}
		}
		if b := strings.TrimSpace(c.o.Getenv("GITHUB_BASE_REF")); b != "" {
			return baseSpec{from: FromMergeBase, branch: b, via: "GITHUB_BASE_REF=" + b}
		}
		if sha := strings.TrimSpace(c.o.Getenv("CI_MERGE_REQUEST_DIFF_BASE_SHA")); sha != "" {
			return baseSpec{from: FromCI, rev: sha, via: "CI_MERGE_REQUEST_DIFF_BASE_SHA"}
		}
		if b := strings.TrimSpace(c.o.Getenv("CI_MERGE_REQUEST_TARGET_BRANCH_NAME")); b != "" {
			return baseSpec{from: FromMergeBase, branch: b, via: "CI_MERGE_REQUEST_TARGET_BRANCH_NAME=" + b}
		}
		return baseSpec{from: FromMergeBase, warn: "pull-request mode but no target branch (set --target-branch; GITHUB_BASE_REF, CI_MERGE_REQUEST_DIFF_BASE_SHA and CI_MERGE_REQUEST_TARGET_BRANCH_NAME are unset)"}
	}
	if s := strings.TrimSpace(c.o.StateCommit); s != "" {
		return baseSpec{from: FromState, rev: s, via: "source.commit of the catalog state file"}
	}
	return baseSpec{from: FromNone}
}

// resolveBase returns the base commit, or nil with Result.All set.
func (c *computer) resolveBase(ctx context.Context, head *object.Commit) (*object.Commit, error) {
	s := c.spec()
	c.res.BaseFrom = s.from
	if s.rev == "" && s.branch == "" {
		if s.warn != "" {
			c.all("%s: every version counts as changed", s.warn)
		} else {
			c.res.All = true
			c.logf("diff: no base commit (first publish): every version counts as changed")
		}
		return nil, nil
	}
	base, p, err := c.try(s, head)
	if err != nil {
		return nil, err
	}
	if p != nil && p.fetchable && c.o.Fetch {
		ferr := c.fetch(ctx, s, p)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if ferr != nil {
			p.fetchErr = ferr
		} else {
			c.res.Fetched = true
			if base, p, err = c.try(s, head); err != nil {
				return nil, err
			}
		}
	}
	if p != nil {
		c.all("%s", p.message(c.o.Fetch))
		return nil, nil
	}
	return base, nil
}

// try resolves the base once. A nil commit comes with a problem.
func (c *computer) try(s baseSpec, head *object.Commit) (*object.Commit, *problem, error) {
	if s.from == FromMergeBase {
		tip, ref := c.branchTip(s.branch)
		if tip == nil {
			b := strings.TrimPrefix(s.branch, "refs/heads/")
			return nil, &problem{msg: fmt.Sprintf("target branch %q (%s) is not in the clone (neither refs/remotes/origin/%s nor refs/heads/%s)", b, s.via, b, b), fetchable: true}, nil
		}
		mbs, err := c.mergeBases(head, tip)
		if errors.Is(err, errIncomplete) {
			return nil, &problem{msg: fmt.Sprintf("cannot compute the merge-base of HEAD and %s: %v", ref, c.incomplete(err)), fetchable: true}, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if len(mbs) == 0 {
			return nil, &problem{msg: fmt.Sprintf("HEAD and %s (%s) have no common ancestor", ref, s.via)}, nil
		}
		c.logf("diff: base %s = merge-base(HEAD, %s) (%s)", short(mbs[0].Hash), ref, s.via)
		return mbs[0], nil, nil
	}

	label := fmt.Sprintf("base %s (%s)", s.rev, s.via)
	if strings.Trim(s.rev, "0") == "" {
		return nil, &problem{msg: label + " is the zero commit (a new branch has no previous commit)"}, nil
	}
	base, err := c.resolveRev(s.rev)
	if err != nil {
		if notFound(err) || errors.Is(err, plumbing.ErrReferenceNotFound) {
			p := &problem{msg: label + " is not in the clone", fetchable: true}
			if c.isShallow() {
				p.msg += " (shallow clone)"
			}
			if plumbing.IsHash(s.rev) {
				p.hash = plumbing.NewHash(s.rev)
			}
			return nil, p, nil
		}
		return nil, nil, fmt.Errorf("%s: %w", label, err)
	}
	bases, err := c.mergeBases(base, head)
	switch {
	case errors.Is(err, errIncomplete):
		if s.from == FromFlag {
			// Explicit: compare the trees anyway; ancestry is unknown.
			return base, nil, nil
		}
		return nil, &problem{msg: fmt.Sprintf("%s: cannot check that it is an ancestor of HEAD: %v", label, c.incomplete(err)), fetchable: true}, nil
	case err != nil:
		return nil, nil, err
	}
	if !containsCommit(bases, base.Hash) {
		if s.from == FromFlag {
			c.warnf("%s is not an ancestor of HEAD %s: comparing the two trees anyway", label, short(head.Hash))
			return base, nil, nil
		}
		return nil, &problem{msg: fmt.Sprintf("%s is not an ancestor of HEAD %s (history rewritten, e.g. by a force push)", label, short(head.Hash))}, nil
	}
	return base, nil, nil
}

func (c *computer) incomplete(err error) string {
	if c.isShallow() {
		return "the clone is shallow and the history is cut off"
	}
	return err.Error()
}

func containsCommit(cs []*object.Commit, h plumbing.Hash) bool {
	for _, c := range cs {
		if c.Hash == h {
			return true
		}
	}
	return false
}

// resolveRev resolves a revision to a commit; a bare branch name that is
// only a remote-tracking branch of origin resolves too.
func (c *computer) resolveRev(rev string) (*object.Commit, error) {
	h, err := c.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil && !plumbing.IsHash(rev) && !strings.HasPrefix(rev, "refs/") {
		if h2, err2 := c.repo.ResolveRevision(plumbing.Revision("refs/remotes/origin/" + rev)); err2 == nil {
			h, err = h2, nil
		}
	}
	if err != nil {
		if plumbing.IsHash(rev) {
			return nil, plumbing.ErrObjectNotFound
		}
		return nil, plumbing.ErrReferenceNotFound
	}
	return c.repo.CommitObject(*h)
}

// branchTip returns the tip of the target branch: refs/remotes/origin/<b>,
// else refs/heads/<b>; nil when neither exists.
func (c *computer) branchTip(b string) (*object.Commit, plumbing.ReferenceName) {
	b = strings.TrimPrefix(b, "refs/heads/")
	for _, rn := range []plumbing.ReferenceName{plumbing.NewRemoteReferenceName("origin", b), plumbing.NewBranchReferenceName(b)} {
		ref, err := c.repo.Reference(rn, true)
		if err != nil {
			continue
		}
		cm, err := c.repo.CommitObject(ref.Hash())
		if err != nil {
			continue
		}
		return cm, rn
	}
	return nil, ""
}

// errIncomplete is history that cannot be walked: a shallow boundary or a
// missing commit where the answer depends on what lies beyond.
var errIncomplete = errors.New("history incomplete")

type incompleteError struct{ at plumbing.Hash }

func (e *incompleteError) Error() string {
	return fmt.Sprintf("history incomplete: the parents of %s are not in the clone", short(e.at))
}
func (e *incompleteError) Is(target error) bool { return target == errIncomplete }

const (
	flagP1 uint8 = 1 << iota
	flagP2
	flagStale
	flagResult
)

// mergeBases returns the best common ancestors of a and b (git's
// paint_down_to_common, newest commit first): the walk stops as soon as
// every commit still queued is below a common ancestor, so its cost grows
// with the distance from the tips to their merge-base, not with the
// history. a is an ancestor of b exactly when a is in the result. A shallow
// boundary or a missing parent reached by a walk whose answer depends on it
// is errIncomplete; go-git's own MergeBase walks the whole history of the
// newer tip and fails on any shallow clone.
func (c *computer) mergeBases(a, b *object.Commit) ([]*object.Commit, error) {
	if a.Hash == b.Hash {
		return []*object.Commit{a}, nil
	}
	flags := map[plumbing.Hash]uint8{a.Hash: flagP1, b.Hash: flagP2}
	q := &commitQueue{flags: flags}
	heap.Push(q, a)
	heap.Push(q, b)
	var results []*object.Commit
	for q.nonStale() {
		cm := heap.Pop(q).(*object.Commit)
		f := flags[cm.Hash] & (flagP1 | flagP2 | flagStale)
		if f == flagP1|flagP2 {
			if flags[cm.Hash]&flagResult == 0 {
				flags[cm.Hash] |= flagResult
				results = append(results, cm)
			}
			f |= flagStale
		}
		if c.shallow[cm.Hash] && len(cm.ParentHashes) > 0 {
			if f&flagStale == 0 {
				return nil, &incompleteError{cm.Hash}
			}
			continue
		}
		for _, ph := range cm.ParentHashes {
			if flags[ph]&f == f {
				continue
			}
			p, err := c.repo.CommitObject(ph)
			if err != nil {
				if notFound(err) {
					if f&flagStale == 0 {
						return nil, &incompleteError{cm.Hash}
					}
					continue
				}
				return nil, err
			}
			flags[ph] |= f
			heap.Push(q, p)
		}
	}
	var out []*object.Commit
	for _, r := range results {
		if flags[r.Hash]&flagStale == 0 {
			out = append(out, r)
		}
	}
	if len(out) > 1 {
		return c.removeRedundant(out)
	}
	return out, nil
}

// removeRedundant drops the candidates that are ancestors of another one
// (criss-cross merges), newest first.
func (c *computer) removeRedundant(cs []*object.Commit) ([]*object.Commit, error) {
	sort.Slice(cs, func(i, j int) bool { return newer(cs[i], cs[j]) })
	var out []*object.Commit
	for i, x := range cs {
		redundant := false
		for j, y := range cs {
			if i == j {
				continue
			}
			mb, err := c.mergeBases(x, y)
			if err != nil {
				return nil, err
			}
			if containsCommit(mb, x.Hash) {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, x)
		}
	}
	return out, nil
}

func newer(a, b *object.Commit) bool {
	ta, tb := a.Committer.When, b.Committer.When
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.Hash.String() < b.Hash.String()
}

// commitQueue is a priority queue of commits, newest committer date first.
type commitQueue struct {
	items []*object.Commit
	flags map[plumbing.Hash]uint8
}

func (q *commitQueue) Len() int           { return len(q.items) }
func (q *commitQueue) Less(i, j int) bool { return newer(q.items[i], q.items[j]) }
func (q *commitQueue) Swap(i, j int)      { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *commitQueue) Push(x any)         { q.items = append(q.items, x.(*object.Commit)) }
func (q *commitQueue) Pop() any {
	n := len(q.items) - 1
	x := q.items[n]
	q.items = q.items[:n]
	return x
}

func (q *commitQueue) nonStale() bool {
	for _, cm := range q.items {
		if q.flags[cm.Hash]&flagStale == 0 {
			return true
		}
	}
	return false
}
