package catalog

import (
	"context"
	"errors"
	"fmt"
	"github.com/operator-publish/publish/internal/scratch"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/operator-publish/publish/internal/gitops"
)

// Tip is the Git-object back end of View: the tip of the catalog branch,
// read from Git objects with nothing checked out, so that reading costs
// what is read. It also writes the next commit from Git objects (Commit)
// and pushes it (Push). Use it for the incremental `plan` and `run`; when
// the caller finds that every file must be read, it opens a Dir instead
// (see FullReadRequiredError).
//
// A local catalog (a path) is opened in place and never written but by the
// push; a remote one is fetched shallow (the tip commit and its tree, one
// branch, no tags, no checkout) into a temporary directory that Close
// removes. New objects live in memory (Overlay) until pushed.
type Tip struct {
	remote Remote
	prefix string
	store  *Overlay
	head   plumbing.Hash
	tree   *object.Tree // the catalog root's tree; nil when there is none
	dir    string       // temporary clone, "" when opened in place
	fs     *filesystem.Storage
	// newBranch: the repo has commits, but not on this branch.
	newBranch bool
}

// tipOpens counts OpenTip calls (TipOpens).
var tipOpens atomic.Int64

// TipOpens returns how many times a catalog branch tip was opened in this
// process (each open of a remote catalog is a fetch): a run or a plan of
// several clusters opens it once.
func TipOpens() int64 { return tipOpens.Load() }

// OpenTip opens the tip of o.Branch of the catalog repo o.URL, rooted at
// o.Path (--catalog-path): a remote branch's tip commit alone, or its
// whole history with o.History. An empty repo, a new branch, or a tip without
// that directory is a Tip with no files (Head "" for the first two).
// Errors: *gitops.UnreachableError for a catalog that cannot be opened or
// fetched, *gitops.AuthError for unusable credentials, a bad
// --catalog-path, *gitops.MissingBranchError for a branch the repo lacks
// while it has others (unless o.CreateBranch, --create-branch).
func OpenTip(ctx context.Context, o gitops.Options) (*Tip, error) {
	tipOpens.Add(1)
	o = o.WithDefaults()
	url, err := o.Endpoint()
	if err != nil {
		return nil, err
	}
	sub, err := gitops.CleanPath(o.Path)
	if err != nil {
		return nil, err
	}
	auth, err := o.AuthMethod()
	if err != nil {
		return nil, err
	}
	t := &Tip{prefix: sub, remote: Remote{URL: url, Branch: o.Branch, Auth: auth, CABundle: o.CABundle, Timeout: o.Timeout, Display: o.URL}}
	var repo *git.Repository
	if gitops.IsLocal(o.URL) {
		if repo, err = t.open(url); err != nil {
			return nil, &gitops.UnreachableError{URL: o.URL, Op: "open", Err: err}
		}
	} else {
		if t.dir, err = scratch.MkdirTemp("", "catalog-tip"); err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		depth := 1
		if o.History {
			depth = 0 // the gates date listings by the branch's history
		}
		err = gitops.RetryEarlyClose(func() (err error) {
			repo, err = git.PlainCloneContext(cctx, t.dir, true, &git.CloneOptions{
				URL: url, Auth: auth, CABundle: o.CABundle,
				ReferenceName: plumbing.NewBranchReferenceName(o.Branch),
				SingleBranch:  true, Depth: depth, NoCheckout: true, Tags: git.NoTags,
			})
			return err
		})
		if err == nil {
			repo, err = t.open(t.dir)
		}
		switch {
		case err == nil:
		case errors.Is(err, transport.ErrEmptyRemoteRepository):
			t.store = NewOverlay(nil)
			return t, nil
		case gitops.IsNoBranch(err):
			if berr := gitops.CheckBranch(ctx, o); berr != nil {
				t.Close()
				return nil, berr
			}
			t.store, t.newBranch = NewOverlay(nil), true
			return t, nil
		default:
			t.Close()
			return nil, &gitops.UnreachableError{URL: o.URL, Op: "clone", Err: err}
		}
	}
	t.store = NewOverlay(repo.Storer)
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(o.Branch), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		if berr := gitops.CheckBranch(ctx, o); berr != nil {
			t.Close()
			return nil, berr
		}
		t.newBranch = hasBranches(repo)
		return t, nil
	}
	if err != nil {
		t.Close()
		return nil, &gitops.UnreachableError{URL: o.URL, Op: "read branch " + o.Branch, Err: err}
	}
	if err := t.setHead(ref.Hash()); err != nil {
		t.Close()
		return nil, &gitops.UnreachableError{URL: o.URL, Op: "read branch " + o.Branch, Err: err}
	}
	return t, nil
}

// open opens the repo at dir (bare, or a working tree with .git) keeping
// its pack files open between reads: go-git's default opens the pack
// again for every object.
func (t *Tip) open(dir string) (*git.Repository, error) {
	gitDir := dir
	if st, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		if !st.IsDir() {
			return git.PlainOpen(dir) // a linked worktree or submodule
		}
		gitDir = filepath.Join(dir, ".git")
	}
	if _, err := os.Stat(filepath.Join(gitDir, "objects")); err != nil {
		return nil, git.ErrRepositoryNotExists
	}
	t.fs = filesystem.NewStorageWithOptions(repoObjects{osfs.New(gitDir)}, cache.NewObjectLRUDefault(), filesystem.Options{KeepDescriptors: true})
	return git.Open(t.fs, nil)
}

// repoObjects is the file system of a Git directory as seen by a reader
// of the repository: without the quarantine directories of the pushes
// being received into it (objects/tmp_objdir-incoming-*, and
// objects/incoming-* before Git 2.35; see git-receive-pack(1),
// QUARANTINE ENVIRONMENT). go-git looks objects up there too, for
// pre-receive hooks written with it. A tip opened in place on a local
// catalog while another run pushes into it would take that push's objects
// for the repo's and leave them out of its own commit (WriteCommit stores
// only what the repo lacks), and they vanish when that push is refused, or
// between the two lookups when they are moved into place: "object not
// found" reading or pushing the commit.
type repoObjects struct{ billy.Filesystem }

// ReadDir hides the quarantine directories from the listing of objects,
// the only way go-git finds them.
func (f repoObjects) ReadDir(dir string) ([]os.FileInfo, error) {
	fis, err := f.Filesystem.ReadDir(dir)
	if err != nil || path.Clean(filepath.ToSlash(dir)) != "objects" {
		return fis, err
	}
	var kept []os.FileInfo
	for _, fi := range fis {
		if n := fi.Name(); !strings.HasPrefix(n, "tmp_objdir-incoming-") && !strings.HasPrefix(n, "incoming-") {
			kept = append(kept, fi)
		}
	}
	return kept, nil
}

// Capabilities are those of the file system underneath.
func (f repoObjects) Capabilities() billy.Capability { return billy.Capabilities(f.Filesystem) }

// setHead points the view at commit h.
func (t *Tip) setHead(h plumbing.Hash) error {
	c, err := object.GetCommit(t.store, h)
	if err != nil {
		return err
	}
	tree, err := object.GetTree(t.store, c.TreeHash)
	if err != nil {
		return err
	}
	t.head, t.tree = h, tree
	if t.prefix != "" {
		t.tree, err = tree.Tree(t.prefix)
		if isNotFound(err) {
			t.tree, err = nil, nil
		}
	}
	return err
}

func isNotFound(err error) bool {
	return errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrFileNotFound)
}

// Head implements View.
func (t *Tip) Head() string {
	if t.head.IsZero() {
		return ""
	}
	return t.head.String()
}

// NewBranch reports that the repo has commits but not on the branch: the
// first push creates it.
func (t *Tip) NewBranch() bool { return t.newBranch }

func hasBranches(r *git.Repository) bool {
	it, err := r.Branches()
	if err != nil {
		return false
	}
	defer it.Close()
	_, err = it.Next()
	return err == nil
}

// Prefix is the catalog root in the repo (--catalog-path, cleaned; "" for
// the repo root).
func (t *Tip) Prefix() string { return t.prefix }

// Storer is the object store the view reads from and Commit writes to.
func (t *Tip) Storer() storer.EncodedObjectStorer { return t.store }

// Close closes the repo's files and removes the temporary clone, if any.
func (t *Tip) Close() error {
	var err error
	if t.fs != nil {
		err = t.fs.Close()
		t.fs = nil
	}
	if t.dir == "" {
		return err
	}
	return errors.Join(err, os.RemoveAll(t.dir))
}

// ReadFile implements View.
func (t *Tip) ReadFile(p string) ([]byte, bool, error) {
	if t.tree == nil {
		return nil, false, nil
	}
	f, err := t.tree.File(p)
	if isNotFound(err) || err == nil && (!f.Mode.IsFile() || f.Mode == filemode.Symlink) {
		return nil, false, nil // as Files: a link is no file
	}
	if err != nil {
		return nil, false, err
	}
	data, err := readBlob(f)
	return data, err == nil, err
}

// Files implements View. Only regular files are read (links and
// submodules are skipped).
func (t *Tip) Files(dir string, skip func(p string, isDir bool) bool) (map[string][]byte, error) {
	out := map[string][]byte{}
	if t.tree == nil {
		return out, nil
	}
	tree := t.tree
	if dir != "" {
		sub, err := t.tree.Tree(dir)
		if isNotFound(err) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		tree = sub
	}
	err := walkTree(tree, dir, skip, func(p string, f *object.File) error {
		data, err := readBlob(f)
		out[p] = data
		return err
	})
	return out, err
}

// Links returns the paths (relative to the catalog root, sorted) of the
// entries below dir that are neither a directory nor a regular file: the
// symbolic links and submodules, which Files and ReadFile leave out. deep
// descends into every subdirectory; else only dir's own entries are
// listed (one tree read). A dir the tip lacks, or that is no directory,
// has none.
func (t *Tip) Links(dir string, deep bool) ([]string, error) {
	if t.tree == nil {
		return nil, nil
	}
	e, err := t.tree.FindEntry(dir)
	if isNotFound(err) || err == nil && e.Mode != filemode.Dir {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tree, err := t.tree.Tree(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	var walk func(tr *object.Tree, prefix string) error
	walk = func(tr *object.Tree, prefix string) error {
		for _, e := range tr.Entries {
			p := path.Join(prefix, e.Name)
			switch {
			case e.Mode == filemode.Dir:
				if !deep {
					continue
				}
				sub, err := tr.Tree(e.Name)
				if err != nil {
					return err
				}
				if err := walk(sub, p); err != nil {
					return err
				}
			case e.Mode == filemode.Regular || e.Mode == filemode.Executable || e.Mode == filemode.Deprecated:
			default:
				out = append(out, p)
			}
		}
		return nil
	}
	if err := walk(tree, dir); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

func walkTree(t *object.Tree, prefix string, skip func(string, bool) bool, fn func(string, *object.File) error) error {
	for _, e := range t.Entries {
		p := path.Join(prefix, e.Name)
		switch {
		case e.Mode == 0o040000: // directory
			if skip != nil && skip(p, true) {
				continue
			}
			sub, err := t.Tree(e.Name)
			if err != nil {
				return err
			}
			if err := walkTree(sub, p, skip, fn); err != nil {
				return err
			}
		case e.Mode.IsFile() && e.Mode != filemode.Symlink:
			if skip != nil && skip(p, false) {
				continue
			}
			f, err := t.TreeEntryFile(&e)
			if err != nil {
				return err
			}
			if err := fn(p, f); err != nil {
				return err
			}
		}
	}
	return nil
}

func readBlob(f *object.File) ([]byte, error) {
	r, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// Commit writes the commit of changes (relative to the catalog root) on
// the tip, from Git objects (WriteCommit with the tip as parent and
// --catalog-path as prefix). Written.Commit is zero when nothing changed.
// The commit is not pushed: see Push.
func (t *Tip) Commit(changes []Change, o CommitOptions) (*Written, error) {
	return WriteCommit(t.store, t.head, t.prefix, changes, o)
}

// Push pushes w (from Commit) to the branch with compare-and-swap: the
// remote branch must still be at w.Parent. A zero w.Commit pushes nothing.
// On success the view shows the new commit. Errors: *gitops.UnreachableError;
// a branch that moved on wraps *RejectedError (gitops.IsRejected is true):
// open a new Tip, render again on it and push again.
func (t *Tip) Push(ctx context.Context, w *Written) (*PushStats, error) {
	if w == nil || w.Commit.IsZero() {
		return &PushStats{}, nil
	}
	st, err := PushCommit(ctx, t.remote, t.store, w)
	if err != nil {
		return st, err
	}
	return st, t.setHead(w.Commit)
}

// Branch is the catalog branch of the tip (--catalog-branch).
func (t *Tip) Branch() string { return t.remote.Branch }

// PushBranch pushes w (from Commit) to branch of the catalog repo instead
// of the catalog branch, replacing whatever commit it is at: the rolling
// branch of a pull request (catalog.PushBranch). The tip stays where it
// is. It returns the commit branch was at ("" when it did not exist).
func (t *Tip) PushBranch(ctx context.Context, w *Written, branch string) (string, error) {
	if branch == t.remote.Branch {
		return "", fmt.Errorf("the pull-request branch %s is the catalog branch: choose another (publish.yaml clusters.<cluster>.pullRequest.branch)", branch)
	}
	was, _, err := PushBranch(ctx, t.remote, t.store, w, branch)
	return was, err
}

// BranchHead returns the commit branch of the catalog repo is at, as the
// Git server advertises it now ("" when the branch does not exist): the
// truth about a pull request's rolling branch, which a forge's API may
// report late. Errors: *gitops.UnreachableError.
func (t *Tip) BranchHead(ctx context.Context, branch string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{t.remote.URL}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: t.remote.Auth, CABundle: t.remote.CABundle})
	if err != nil {
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return "", nil
		}
		return "", &gitops.UnreachableError{URL: t.remote.Display, Op: "list branches", Err: err}
	}
	want := plumbing.NewBranchReferenceName(branch)
	for _, r := range refs {
		if r.Name() == want {
			return r.Hash().String(), nil
		}
	}
	return "", nil
}

func (t *Tip) timeout() time.Duration {
	if t.remote.Timeout > 0 {
		return t.remote.Timeout
	}
	return 5 * time.Minute
}

// DeleteBranch removes branch of the catalog repo, which must not be the
// catalog branch; one that does not exist is not an error.
func (t *Tip) DeleteBranch(ctx context.Context, branch string) error {
	if branch == t.remote.Branch {
		return fmt.Errorf("refusing to delete the catalog branch %s", branch)
	}
	return DeleteBranch(ctx, t.remote, branch)
}

// CommitOptionsFor returns the CommitOptions of o (author, committer and
// signer, with the defaults of gitops.Options) for msg at when.
func CommitOptionsFor(o gitops.Options, msg string, when time.Time) CommitOptions {
	o = o.WithDefaults()
	return CommitOptions{
		Message:   msg,
		Author:    object.Signature{Name: o.AuthorName, Email: o.AuthorEmail, When: when},
		Committer: object.Signature{Name: o.CommitterName, Email: o.CommitterEmail, When: when},
		Signer:    o.Signer,
	}
}

var _ View = (*Tip)(nil)
var _ View = (*Dir)(nil)

func (t *Tip) String() string { return fmt.Sprintf("catalog tip %s of %s", t.Head(), t.remote.Branch) }
