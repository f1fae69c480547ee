package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/operator-publish/publish/internal/gitops"
)

// VersionEvent is one change of a version on one cluster as the catalog's
// history records it: the catalog commit after which the version was
// listed (Present) or delisted, or was listed with another bundle digest
// (an in-place update), and that commit's committer time. The commit that
// first records a version is an event too.
type VersionEvent struct {
	Cluster, Artifact, Version string
	Present                    bool
	BundleDigest               string
	Commit                     string    // the catalog commit, full hash
	Time                       time.Time // its committer time
}

// History is what the catalog's history says about the versions of one
// cluster, read from publish/state/<cluster>.yaml (or, in commits written
// before state per cluster, publish/state.yaml) at each commit of the
// branch's first-parent line that changed it. Time is the committer time
// of the catalog commit, which is when publish pushed it: the cluster
// follows when Argo CD or Flux syncs.
type History struct {
	Cluster string
	// Truncated: the walk reached a commit whose parent is not in the
	// repository (a shallow clone, the tip that OpenTip fetches), so a
	// version's first event may be later than the version's first listing
	// (it then says when the walk first saw it).
	Truncated bool
	// Commits is how many commits the walk read.
	Commits int
	// Last is the committer time of the newest commit that changed the
	// cluster's state file: the cluster's last publish that committed
	// anything. Zero when no commit has the file.
	Last   time.Time
	events map[[2]string][]VersionEvent
}

// NewHistory returns the History of cluster made of events (each of that
// cluster; oldest first per version), not read from a repository: for the
// judges of a history (the gates, internal/rollout) to be tested on a
// history written out.
func NewHistory(cluster string, events ...VersionEvent) *History {
	h := &History{Cluster: cluster, events: map[[2]string][]VersionEvent{}}
	for _, e := range events {
		k := [2]string{e.Artifact, e.Version}
		h.events[k] = append(h.events[k], e)
		if e.Time.After(h.Last) {
			h.Last = e.Time
		}
	}
	return h
}

// Events returns the events of one version, oldest first; none when the
// history never records it.
func (h *History) Events(artifact, version string) []VersionEvent {
	return h.events[[2]string{artifact, version}]
}

// Since returns the event that gave the version the listing it has at the
// tip (listed or delisted, and its bundle digest): the time it has been
// so since. ok is false when the history never records the version.
func (h *History) Since(artifact, version string) (e VersionEvent, ok bool) {
	ev := h.Events(artifact, version)
	if len(ev) == 0 {
		return VersionEvent{}, false
	}
	return ev[len(ev)-1], true
}

// ReadHistory walks the first-parent line from the commit head in s, the
// catalog rooted at prefix (--catalog-path; "" for the repository root),
// and returns the History of cluster: for each version, every commit that
// changed whether it is listed, or its bundle digest, oldest first. Only
// commits whose state blob differs from their parent's are parsed. A
// missing parent ends the walk with History.Truncated; a state file that
// does not parse is an error naming the commit and the file; ctx stops the
// walk. A zero head is an empty History.
func ReadHistory(ctx context.Context, s storer.EncodedObjectStorer, head plumbing.Hash, prefix, cluster string) (*History, error) {
	h := &History{Cluster: cluster, events: map[[2]string][]VersionEvent{}}
	if head.IsZero() {
		return h, nil
	}
	type point struct {
		commit *object.Commit
		blob   plumbing.Hash // the state blob; zero when the commit has none
		legacy bool
	}
	// Newest first along the first parents, keeping the commits whose
	// state blob differs from the next older one.
	var line []point
	c, err := object.GetCommit(s, head)
	if err != nil {
		return nil, fmt.Errorf("catalog history of cluster %s: reading commit %s: %w", cluster, head, err)
	}
	for c != nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h.Commits++
		blob, legacy, err := stateBlob(s, c, prefix, cluster)
		if err != nil {
			return nil, err
		}
		if len(line) > 0 && line[len(line)-1].blob == blob && line[len(line)-1].legacy == legacy {
			line[len(line)-1].commit = c // the same state: the older commit wrote it
		} else {
			line = append(line, point{c, blob, legacy})
		}
		if c.NumParents() == 0 {
			break
		}
		parent, err := object.GetCommit(s, c.ParentHashes[0])
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			h.Truncated = true
			break
		}
		if err != nil {
			return nil, fmt.Errorf("catalog history of cluster %s: reading commit %s: %w", cluster, c.ParentHashes[0], err)
		}
		c = parent
	}
	if len(line) > 0 && !line[0].blob.IsZero() {
		h.Last = line[0].commit.Committer.When
	}
	prev := map[[2]string]VersionEvent{}
	for i := len(line) - 1; i >= 0; i-- {
		p := line[i]
		if p.blob.IsZero() {
			continue
		}
		st, err := readState(s, p.blob, p.legacy, cluster, p.commit.Hash)
		if err != nil {
			return nil, err
		}
		if st == nil {
			continue
		}
		for _, a := range st.Artifacts {
			for _, v := range a.Versions {
				k := [2]string{a.Name, v.Version}
				present := v.Present && a.Present
				if last, ok := prev[k]; ok && last.Present == present && last.BundleDigest == v.BundleDigest {
					continue
				}
				e := VersionEvent{Cluster: cluster, Artifact: a.Name, Version: v.Version, Present: present,
					BundleDigest: v.BundleDigest, Commit: p.commit.Hash.String(), Time: p.commit.Committer.When}
				prev[k] = e
				h.events[k] = append(h.events[k], e)
			}
		}
	}
	return h, nil
}

// stateBlob returns the hash of the cluster's state file in commit c, or
// of the older single state file when there is none (legacy true); zero
// when the commit has neither.
func stateBlob(s storer.EncodedObjectStorer, c *object.Commit, prefix, cluster string) (plumbing.Hash, bool, error) {
	tree, err := object.GetTree(s, c.TreeHash)
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("catalog history of cluster %s: reading the tree of commit %s: %w", cluster, c.Hash, err)
	}
	for _, p := range []struct {
		file   string
		legacy bool
	}{{gitops.StatePath(cluster), false}, {gitops.LegacyStatePath, true}} {
		e, err := tree.FindEntry(path.Join(prefix, p.file))
		if err == nil {
			return e.Hash, p.legacy, nil
		}
		if !errors.Is(err, object.ErrEntryNotFound) && !errors.Is(err, object.ErrDirectoryNotFound) {
			return plumbing.ZeroHash, false, fmt.Errorf("catalog history of cluster %s: commit %s: %w", cluster, c.Hash, err)
		}
	}
	return plumbing.ZeroHash, false, nil
}

// readState parses the state blob h of commit; for the older single file,
// the cluster's part of it (nil when it records nothing of the cluster).
func readState(s storer.EncodedObjectStorer, h plumbing.Hash, legacy bool, cluster string, commit plumbing.Hash) (*gitops.State, error) {
	b, err := object.GetBlob(s, h)
	if err != nil {
		return nil, fmt.Errorf("catalog history of cluster %s: commit %s: reading the state file: %w", cluster, commit, err)
	}
	r, err := b.Reader()
	if err != nil {
		return nil, fmt.Errorf("catalog history of cluster %s: commit %s: reading the state file: %w", cluster, commit, err)
	}
	data, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		return nil, fmt.Errorf("catalog history of cluster %s: commit %s: reading the state file: %w", cluster, commit, err)
	}
	if !legacy {
		st, err := gitops.ParseState(gitops.StatePath(cluster), data)
		if err != nil {
			return nil, fmt.Errorf("catalog history, commit %s: %w", commit, err)
		}
		return st, nil
	}
	st, err := gitops.ParseLegacyState(data)
	if err != nil {
		return nil, fmt.Errorf("catalog history, commit %s: %w", commit, err)
	}
	return st.Split()[cluster], nil
}

// History reads the History of cluster from the tip's branch (ReadHistory
// over the tip's objects). OpenTip fetches the tip commit alone from a
// remote catalog, so there the History is Truncated and holds what the tip
// records; a local catalog has its whole line.
func (t *Tip) History(ctx context.Context, cluster string) (*History, error) {
	return ReadHistory(ctx, t.store, t.head, t.prefix, cluster)
}

// ErrNotFetched is the error of StatesAround when the tip's objects lack
// the commit asked for or its parent: a remote catalog opened without
// gitops.Options.History holds its tip commit alone.
var ErrNotFetched = errors.New("commit not fetched")

// StatesAround returns the state of cluster (publish/state/<cluster>.yaml
// under the tip's --catalog-path, or its part of the older single state
// file) in commit (a full hash) and in commit's first parent, read from
// the tip's objects: what commit changed of the cluster's listings. For
// the commit a forge wrote when it merged a pull request into the catalog
// branch that is what the pull request changed: a merge commit's first
// parent is the branch before the merge, and a squash or rebase merge of
// the one commit of a rolling branch is one commit on it. A commit, or a
// root commit's missing parent, without the file gives a nil State.
// Errors: ErrNotFetched (wrapped) when the objects lack commit or its
// parent; a state file that does not parse (naming the commit).
func (t *Tip) StatesAround(commit, cluster string) (parent, at *gitops.State, err error) {
	read := func(h plumbing.Hash) (*object.Commit, *gitops.State, error) {
		c, err := object.GetCommit(t.store, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return nil, nil, fmt.Errorf("catalog commit %s: %w", h, ErrNotFetched)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("catalog commit %s: %w", h, err)
		}
		blob, legacy, err := stateBlob(t.store, c, t.prefix, cluster)
		if err != nil || blob.IsZero() {
			return c, nil, err
		}
		st, err := readState(t.store, blob, legacy, cluster, c.Hash)
		return c, st, err
	}
	c, at, err := read(plumbing.NewHash(commit))
	if err != nil {
		return nil, nil, err
	}
	if c.NumParents() == 0 {
		return nil, at, nil
	}
	if _, parent, err = read(c.ParentHashes[0]); err != nil {
		return nil, nil, err
	}
	return parent, at, nil
}
