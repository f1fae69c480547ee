package gitops

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Snapshot is a read-only view of the catalog branch tip with no working
// tree: `publish plan` reads the state, the overlays and the rendered files
// of the changed artifacts from Git objects instead of checking out every
// file of a catalog that can hold tens of thousands of them.
//
// A local catalog (a path) is opened in place and never written; a remote
// one is fetched (tip only, no checkout) into a temporary directory that
// Close removes.
type Snapshot struct {
	// Head is the commit hash of the branch tip ("" when the branch has no
	// commits: Tree is nil then).
	Head string

	tree *object.Tree
	dir  string // temporary clone to remove, "" when opened in place
}

// OpenSnapshot opens the tip of o.Branch of the catalog repo o.URL, rooted
// at o.Path (--catalog-path). A repo or branch without commits, or without
// that directory, is a Snapshot with Head "". Errors:
// *UnreachableError for a catalog that cannot be opened or fetched.
func OpenSnapshot(ctx context.Context, o Options) (*Snapshot, error) {
	o.defaults()
	url, err := o.endpoint()
	if err != nil {
		return nil, err
	}
	sub, err := cleanPath(o.Path)
	if err != nil {
		return nil, err
	}
	auth, err := o.auth()
	if err != nil {
		return nil, err
	}
	s := &Snapshot{}
	var repo *git.Repository
	if !strings.Contains(url, "://") && !isSSH(url) {
		repo, err = git.PlainOpen(url)
		if err != nil {
			return nil, &UnreachableError{URL: o.URL, Op: "open", Err: err}
		}
	} else {
		if s.dir, err = os.MkdirTemp("", "publish-catalog-snapshot-"); err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		repo, err = git.PlainCloneContext(cctx, s.dir, true, &git.CloneOptions{
			URL: url, Auth: auth, CABundle: o.CABundle,
			ReferenceName: plumbing.NewBranchReferenceName(o.Branch),
			SingleBranch:  true, Depth: 1, NoCheckout: true, Tags: git.NoTags,
		})
		switch {
		case err == nil:
		case errors.Is(err, transport.ErrEmptyRemoteRepository):
			return s, nil
		case isNoBranch(err):
			if berr := checkBranch(ctx, o, url); berr != nil {
				s.Close()
				return nil, berr
			}
			return s, nil
		default:
			s.Close()
			return nil, &UnreachableError{URL: o.URL, Op: "clone", Err: err}
		}
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(o.Branch), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		if berr := checkBranch(ctx, o, url); berr != nil {
			s.Close()
			return nil, berr
		}
		return s, nil
	}
	if err != nil {
		s.Close()
		return nil, &UnreachableError{URL: o.URL, Op: "read branch " + o.Branch, Err: err}
	}
	c, err := repo.CommitObject(ref.Hash())
	if err == nil {
		s.tree, err = c.Tree()
	}
	if err == nil && sub != "" {
		// --catalog-path: the catalog is a directory of the repo.
		s.tree, err = s.tree.Tree(sub)
		if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
			s.tree = nil
			return s, nil
		}
	}
	if err != nil {
		s.Close()
		return nil, &UnreachableError{URL: o.URL, Op: "read branch " + o.Branch, Err: err}
	}
	s.Head = ref.Hash().String()
	return s, nil
}

// Close removes the temporary clone, if any.
func (s *Snapshot) Close() error {
	if s.dir == "" {
		return nil
	}
	return os.RemoveAll(s.dir)
}

// ReadFile returns the content of the file at p (slash-separated, relative
// to the repo root) and whether it exists.
func (s *Snapshot) ReadFile(p string) ([]byte, bool, error) {
	if s.tree == nil {
		return nil, false, nil
	}
	f, err := s.tree.File(p)
	if errors.Is(err, object.ErrFileNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	data, err := readBlob(f)
	return data, err == nil, err
}

// Files returns every regular file below dir (slash-separated, relative to
// the repo root; "" is the whole tree) whose path skip does not reject
// (skip gets directories too and may prune them), keyed by repo-relative
// path. A missing dir is an empty map.
func (s *Snapshot) Files(dir string, skip func(p string, isDir bool) bool) (map[string][]byte, error) {
	out := map[string][]byte{}
	if s.tree == nil {
		return out, nil
	}
	t := s.tree
	if dir != "" {
		sub, err := s.tree.Tree(dir)
		if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrFileNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		t = sub
	}
	err := walkTree(t, dir, skip, func(p string, f *object.File) error {
		data, err := readBlob(f)
		out[p] = data
		return err
	})
	return out, err
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
		case e.Mode.IsFile():
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

// State reads publish/state.yaml at the tip: an empty state when the file
// (or the branch) does not exist, an error when it does not parse.
func (s *Snapshot) State() (*State, error) {
	data, ok, err := s.ReadFile(StatePath)
	if err != nil {
		return nil, err
	}
	if !ok {
		return &State{APIVersion: StateAPIVersion, Kind: StateKind}, nil
	}
	return ParseState(data)
}

// CheckBranch is called when o.Branch is missing from the catalog repo
// (a clone found no such branch): it returns a *MissingBranchError naming
// the branches the repo has, unless o.CreateBranch (--create-branch) or the
// repo has no branch at all (a new, empty repo is seeded). Errors:
// *UnreachableError when the branches cannot be listed.
func CheckBranch(ctx context.Context, o Options) error {
	o.defaults()
	url, err := o.endpoint()
	if err != nil {
		return err
	}
	return checkBranch(ctx, o, url)
}
