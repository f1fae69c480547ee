package diff

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/source"
	yaml "go.yaml.in/yaml/v3"
)

// Kind is what happened to one version between base and HEAD.
type Kind string

// The kinds of change.
const (
	Added    Kind = "added"
	Modified Kind = "modified"
	Removed  Kind = "removed"
)

// Where the base came from (Result.BaseFrom).
const (
	FromFlag      = "flag"       // Options.Base (--base)
	FromMergeBase = "merge-base" // PR mode: merge-base(HEAD, target branch)
	FromCI        = "ci"         // PR mode: CI_MERGE_REQUEST_DIFF_BASE_SHA
	FromState     = "state"      // Options.StateCommit (catalog state file)
	FromNone      = "none"       // no base: first publish
)

// Change is one version of one artifact that was added, modified or removed.
type Change struct {
	// Artifact and Version are the identity the manifest declares
	// (metadata.name, spec.version); Version is semver without "v".
	Artifact string `json:"artifact"`
	Version  string `json:"version"`
	Kind     Kind   `json:"kind"`
	// Path is the manifest path at HEAD (at base for removed), slash
	// separated, relative to the repo root.
	Path string `json:"path"`
	// OldPath is the path at base of a modified version ("" otherwise).
	OldPath string `json:"oldPath,omitempty"`
}

// Options configures Compute.
type Options struct {
	// Repo is a directory inside the package repo's worktree (--source);
	// the repository is found upward from it.
	Repo string
	// Source, when set, is the package repo already opened (source.Open)
	// for Repo: Compute reads it instead of opening the repository again.
	Source *source.Repo
	// PackagesDir is the packages directory, relative to Repo (default
	// "packages"); only manifest.yaml files below it count.
	PackagesDir string
	// Base is an explicit revision (sha, branch, tag): it wins over
	// everything else.
	Base string
	// PR is pull-request mode: the base is the merge-base of HEAD and the
	// target branch.
	PR bool
	// TargetBranch is the pull request's target branch (--target-branch);
	// "" reads GITHUB_BASE_REF, CI_MERGE_REQUEST_DIFF_BASE_SHA (a sha, used
	// as the base as is), CI_MERGE_REQUEST_TARGET_BRANCH_NAME, in that order.
	TargetBranch string
	// StateCommit is source.commit of the catalog's publish/state.yaml
	// (run mode); "" is a first publish.
	StateCommit string
	// Fetch allows fetching from the remote "origin" to deepen a shallow
	// clone or get a missing base or target branch.
	Fetch bool
	// FetchTimeout bounds the fetch (default 5 minutes); ctx bounds it too.
	FetchTimeout time.Duration
	// Getenv reads the CI environment; nil is os.Getenv.
	Getenv func(string) string
	// Log receives progress lines and warnings; nil discards them.
	Log io.Writer
}

// Result is the set of changes between Base and Head.
type Result struct {
	// Base and Head are commit hashes; Base is "" when there is no usable
	// base (All).
	Base string `json:"base"`
	Head string `json:"head"`
	// BaseFrom says where the base came from: FromFlag, FromMergeBase,
	// FromCI, FromState or FromNone. With All it names the source that was
	// tried and could not be used.
	BaseFrom string `json:"baseFrom"`
	// All is true when there is no usable base: every version counts as
	// changed and Changes is empty.
	All bool `json:"all"`
	// Warnings explain a base that could not be used or a fetch (a base
	// equal to HEAD is information, written to Options.Log only). They were
	// also written to Options.Log.
	Warnings []string `json:"warnings,omitempty"`
	// Changes is sorted by artifact, version (semver order), kind.
	Changes []Change `json:"changes"`
	// Invalid lists manifest.yaml files changed between base and HEAD that
	// do not parse at HEAD (repo-root relative, sorted): lint reports why.
	Invalid []string `json:"invalid,omitempty"`
	// Fetched is true when Compute fetched from origin.
	Fetched bool `json:"fetched,omitempty"`
	// Moved are the versions whose manifest moved with identical content
	// (git mv packages/etcd/1.0.0 packages/etcd/v1.0.0): Path the new
	// path, OldPath the old, Kind Modified. They are not changes (Changed
	// is false for them); the state, which records each version's path,
	// follows them.
	Moved []Change `json:"moved,omitempty"`

	index map[string]Kind
}

// Changed reports whether a version counts as changed: every version when
// All, else one that was added or modified.
func (r *Result) Changed(artifact, version string) bool {
	if r == nil || r.All {
		return true
	}
	version = strings.TrimPrefix(version, "v")
	if r.index != nil {
		k, ok := r.index[key(artifact, version)]
		return ok && k != Removed
	}
	for _, c := range r.Changes {
		if c.Artifact == artifact && c.Version == version && c.Kind != Removed {
			return true
		}
	}
	return false
}

// Removed returns the removed versions (none when All: the caller compares
// against its own record of what was published).
func (r *Result) Removed() []Change {
	if r == nil {
		return nil
	}
	var out []Change
	for _, c := range r.Changes {
		if c.Kind == Removed {
			out = append(out, c)
		}
	}
	return out
}

// Count returns how many changes of each kind there are.
func (r *Result) Count(k Kind) int {
	if r == nil {
		return 0
	}
	n := 0
	for _, c := range r.Changes {
		if c.Kind == k {
			n++
		}
	}
	return n
}

func key(artifact, version string) string { return artifact + "\x00" + version }

// computer holds one Compute call's state.
type computer struct {
	o       Options
	repo    *git.Repository
	root    string // worktree root (the git dir for a bare repo)
	prefix  string // packages dir, slash separated, relative to root; "" is the root
	res     *Result
	shallow map[plumbing.Hash]bool
}

// Compute resolves the base and diffs its packages tree against HEAD's.
// Errors are for a repo that cannot be read (not a Git repo, no commit,
// corrupt objects, cancelled ctx); a base that cannot be used is All with a
// warning, not an error.
func Compute(ctx context.Context, o Options) (*Result, error) {
	if o.PackagesDir == "" {
		o.PackagesDir = "packages"
	}
	c, headCommit, base, err := start(ctx, o, "package repo")
	if c == nil {
		return nil, err
	}
	if err != nil || base == nil {
		return c.finish(), err
	}
	if base.Hash == headCommit.Hash {
		c.logf("diff: base %s (%s) is HEAD: nothing to compare, no changes", short(base.Hash), c.res.BaseFrom)
		return c.finish(), nil
	}
	if err := c.diff(ctx, base, headCommit); err != nil {
		var miss *missingObjectError
		if errors.As(err, &miss) {
			c.all("%v: every version counts as changed (partial or shallow clone? %s)", err, depthHint)
			return c.finish(), nil
		}
		return nil, err
	}
	c.logf("diff: %s (%s) .. %s: %d added, %d modified, %d removed, %d invalid",
		short(base.Hash), c.res.BaseFrom, short(headCommit.Hash),
		c.res.Count(Added), c.res.Count(Modified), c.res.Count(Removed), len(c.res.Invalid))
	return c.finish(), nil
}

func (c *computer) finish() *Result {
	r := c.res
	if r.All {
		r.Base, r.Changes, r.Invalid, r.index = "", nil, nil, nil
	}
	return r
}

// open finds the repository upward from Options.Repo and the packages
// directory inside it.
func (c *computer) open() error {
	dir, err := filepath.Abs(c.o.Repo)
	if err != nil {
		return err
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	var repo *git.Repository
	if c.o.Source != nil {
		if !c.o.Source.IsGit() {
			return fmt.Errorf("%s is not inside a Git repository (the package repo must be a Git checkout to compute changes): %w", dir, c.o.Source.NotGit())
		}
		repo = c.o.Source.Git()
	} else if repo, err = source.PlainOpen(dir); err != nil {
		return fmt.Errorf("%s is not inside a Git repository (the package repo must be a Git checkout to compute changes): %w", dir, err)
	}
	c.repo = repo
	c.root = dir
	if wt, err := repo.Worktree(); err == nil {
		c.root = wt.Filesystem.Root()
		if r, err := filepath.EvalSymlinks(c.root); err == nil {
			c.root = r
		}
	}
	pk := c.o.PackagesDir
	if !filepath.IsAbs(pk) {
		pk = filepath.Join(dir, pk)
	} else if p, err := filepath.EvalSymlinks(pk); err == nil {
		pk = p
	}
	rel, err := filepath.Rel(c.root, pk)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("packages directory %s is outside the Git repository %s", pk, c.root)
	}
	c.prefix = filepath.ToSlash(rel)
	if c.prefix == "." {
		c.prefix = ""
	}
	return c.loadShallow()
}

// reopen opens the repository again after a fetch by the git command, so
// that go-git sees the new packfiles and shallow file.
func (c *computer) reopen() error {
	if c.o.Source != nil {
		if err := c.o.Source.Reopen(); err != nil {
			return err
		}
		c.repo = c.o.Source.Git()
		return c.loadShallow()
	}
	repo, err := source.PlainOpen(c.root)
	if err != nil {
		return err
	}
	c.repo = repo
	return c.loadShallow()
}

func (c *computer) loadShallow() error {
	list, err := c.repo.Storer.Shallow()
	if err != nil {
		return fmt.Errorf("reading the shallow list of %s: %w", c.root, err)
	}
	c.shallow = make(map[plumbing.Hash]bool, len(list))
	for _, h := range list {
		c.shallow[h] = true
	}
	return nil
}

func (c *computer) isShallow() bool { return len(c.shallow) > 0 }

func (c *computer) logf(format string, args ...any) {
	fmt.Fprintf(c.o.Log, format+"\n", args...)
}

func (c *computer) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.res.Warnings = append(c.res.Warnings, msg)
	c.logf("diff: warning: %s", msg)
}

// all gives up on the base: every version counts as changed.
func (c *computer) all(format string, args ...any) {
	c.res.All = true
	c.warnf(format, args...)
}

func short(h plumbing.Hash) string { return h.String()[:12] }

// missingObjectError is an object the diff needs that the clone lacks.
type missingObjectError struct {
	what string
	hash plumbing.Hash
}

func (e *missingObjectError) Error() string {
	return fmt.Sprintf("%s %s is not in the clone", e.what, e.hash)
}

func notFound(err error) bool {
	return errors.Is(err, plumbing.ErrObjectNotFound)
}

// subtree returns the packages tree of a commit; nil when the commit has no
// packages directory (an empty tree to the diff).
func (c *computer) subtree(cm *object.Commit) (*object.Tree, error) {
	t, err := c.repo.TreeObject(cm.TreeHash)
	if err != nil {
		if notFound(err) {
			return nil, &missingObjectError{"tree of commit " + short(cm.Hash), cm.TreeHash}
		}
		return nil, err
	}
	if c.prefix == "" {
		return t, nil
	}
	e, err := t.FindEntry(c.prefix)
	if err != nil || e.Mode != filemode.Dir {
		return nil, nil // no packages directory at this commit
	}
	st, err := c.repo.TreeObject(e.Hash)
	if err != nil {
		if notFound(err) {
			return nil, &missingObjectError{"tree " + c.prefix + " of commit " + short(cm.Hash), e.Hash}
		}
		return nil, err
	}
	return st, nil
}

// side is one manifest file on one side of the diff.
type side struct {
	path string
	blob plumbing.Hash
}

// diff compares the packages trees of base and head and fills the result.
func (c *computer) diff(ctx context.Context, base, head *object.Commit) error {
	bt, err := c.subtree(base)
	if err != nil {
		return err
	}
	ht, err := c.subtree(head)
	if err != nil {
		return err
	}
	if bt != nil && ht != nil && bt.Hash == ht.Hash {
		return nil
	}
	var changes []fileChange
	if err := c.diffTrees(ctx, "", bt, ht, &changes); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	olds := map[string][]side{}
	news := map[string][]side{}
	ids := map[string][2]string{}
	invalid := map[string]bool{}
	for _, ch := range changes {
		if ch.from != nil { // deleted or modified: the base side
			id, p, ok, err := c.identity(ch.name, ch.from, false)
			if err != nil {
				return err
			}
			if ok {
				olds[id.k] = append(olds[id.k], side{p, ch.from.Hash})
				ids[id.k] = [2]string{id.artifact, id.version}
			}
		}
		if ch.to != nil { // added or modified: the HEAD side
			id, p, ok, err := c.identity(ch.name, ch.to, true)
			if err != nil {
				return err
			}
			if ok && id.k == "" {
				invalid[p] = true
			} else if ok {
				news[id.k] = append(news[id.k], side{p, ch.to.Hash})
				ids[id.k] = [2]string{id.artifact, id.version}
			}
		}
	}
	c.res.index = map[string]Kind{}
	for k, id := range ids {
		o, n := olds[k], news[k]
		sortSides(o)
		sortSides(n)
		ch := Change{Artifact: id[0], Version: id[1]}
		switch {
		case len(o) > 0 && len(n) > 0:
			p, changed := changedSide(o, n)
			if !changed {
				// Moved with identical content: no change, but a new
				// path (a version read from several files is a lint
				// finding, not a move).
				if len(o) == 1 && len(n) == 1 && o[0].path != n[0].path {
					c.res.Moved = append(c.res.Moved, Change{Artifact: id[0], Version: id[1], Kind: Modified, Path: n[0].path, OldPath: o[0].path})
				}
				continue
			}
			ch.Kind, ch.Path, ch.OldPath = Modified, p, o[0].path
		case len(n) > 0:
			ch.Kind, ch.Path = Added, n[0].path
		default:
			if invalid[o[0].path] {
				// The same file no longer parses: its identity at HEAD
				// is unknown, not gone (lint reports the file).
				continue
			}
			ch.Kind, ch.Path = Removed, o[0].path
		}
		c.res.Changes = append(c.res.Changes, ch)
		c.res.index[k] = ch.Kind
	}
	sortChanges(c.res.Changes)
	sortChanges(c.res.Moved)
	for p := range invalid {
		c.res.Invalid = append(c.res.Invalid, p)
	}
	sort.Strings(c.res.Invalid)
	return nil
}

func sortSides(s []side) {
	sort.Slice(s, func(i, j int) bool { return s[i].path < s[j].path })
}

// changedSide reports whether the HEAD copies of one identity differ from
// the base copies, and the HEAD path to report.
func changedSide(o, n []side) (string, bool) {
	old := map[plumbing.Hash]bool{}
	for _, s := range o {
		old[s.blob] = true
	}
	for _, s := range n {
		if !old[s.blob] {
			return s.path, true
		}
	}
	cur := map[plumbing.Hash]bool{}
	for _, s := range n {
		cur[s.blob] = true
	}
	for _, s := range o {
		if !cur[s.blob] {
			return n[0].path, true
		}
	}
	return "", false
}

type ident struct{ k, artifact, version string }

// identity reads one changed file. ok is false for a file that is not a
// PackageManifest manifest.yaml. At HEAD (head true) a manifest that does not
// parse is ok with an empty identity (Result.Invalid); at base it is skipped:
// it cannot have been published.
func (c *computer) identity(name string, e *object.TreeEntry, head bool) (ident, string, bool, error) {
	if path.Base(name) != manifest.FileName || !e.Mode.IsFile() || e.Mode == filemode.Symlink {
		return ident{}, "", false, nil
	}
	p := name
	if c.prefix != "" {
		p = c.prefix + "/" + p
	}
	blob, err := c.repo.BlobObject(e.Hash)
	if err != nil {
		if notFound(err) {
			return ident{}, "", false, &missingObjectError{"blob of " + p, e.Hash}
		}
		return ident{}, "", false, err
	}
	r, err := blob.Reader()
	if err != nil {
		return ident{}, "", false, err
	}
	data, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		return ident{}, "", false, fmt.Errorf("reading %s (%s): %w", p, e.Hash, err)
	}
	if !isPackageManifest(data) {
		return ident{}, "", false, nil
	}
	m, err := manifest.Parse(p, data)
	if err != nil {
		if head {
			c.logf("diff: %s does not parse at HEAD: %v", p, err)
			return ident{}, p, true, nil
		}
		return ident{}, "", false, nil
	}
	v := m.Version.String()
	return ident{key(m.Artifact, v), m.Artifact, v}, p, true, nil
}

// isPackageManifest mirrors manifest.Scan: a file is ours when its kind is
// PackageManifest or when it has no readable kind (Parse then says why).
func isPackageManifest(data []byte) bool {
	var peek struct {
		Kind string `yaml:"kind"`
	}
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&peek); err != nil {
		return true
	}
	return peek.Kind == "" || peek.Kind == manifest.Kind
}

func sortChanges(cs []Change) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.Artifact != b.Artifact {
			return a.Artifact < b.Artifact
		}
		if a.Version != b.Version {
			va, ea := semver.Parse(a.Version)
			vb, eb := semver.Parse(b.Version)
			if ea == nil && eb == nil {
				if c := va.Compare(vb); c != 0 {
					return c < 0
				}
			}
			return a.Version < b.Version
		}
		return a.Kind < b.Kind
	})
}

// start opens the repo of o (with its defaults set), reads HEAD and
// resolves the base (resolveBase), as Compute and ResolveBase both begin.
// what names the repo in errors. base is nil when there is no usable one
// (the Result says why); otherwise Result.Base is set. Errors: the repo or
// its HEAD cannot be read (c is nil), or the base cannot be resolved (c is
// set: the caller returns c.finish() with the error, as before).
func start(ctx context.Context, o Options, what string) (c *computer, head *object.Commit, base *object.Commit, err error) {
	if o.Repo == "" {
		o.Repo = "."
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = 5 * time.Minute
	}
	c = &computer{o: o, res: &Result{}}
	if err := c.open(); err != nil {
		return nil, nil, nil, err
	}
	ref, err := c.repo.Head()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s %s: no HEAD commit: %w", what, c.root, err)
	}
	head, err = c.repo.CommitObject(ref.Hash())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s %s: reading HEAD commit %s: %w", what, c.root, ref.Hash(), err)
	}
	c.res.Head = ref.Hash().String()
	base, err = c.resolveBase(ctx, head)
	if err != nil {
		return c, head, nil, err
	}
	if base != nil {
		c.res.Base = base.Hash.String()
	}
	return c, head, base, nil
}
