package catalog

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5"
)

// Dir is the full-read back end of View: the catalog as checked out in a
// directory (gitops.Clone's Repo.Dir). It reads what is on disk, changes
// not yet committed included; use it when every file must be read (a
// first publish, a changed overlay: see FullReadRequiredError).
type Dir struct {
	root string
	head string
}

// OpenDir opens the catalog checked out at root (the catalog root: the
// clone's root, or --catalog-path below it). Head is the HEAD commit of the
// Git repo that contains root, "" when there is none or HEAD has no commit.
// Errors: root is not a directory.
func OpenDir(root string) (*Dir, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, &fs.PathError{Op: "open catalog", Path: root, Err: errors.New("not a directory")}
	}
	d := &Dir{root: root}
	// A linked worktree (git worktree add) keeps its refs in the main
	// repo's common directory.
	if r, err := git.PlainOpenWithOptions(root, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true}); err == nil {
		if ref, err := r.Head(); err == nil {
			d.head = ref.Hash().String()
		}
	}
	return d, nil
}

// Head implements View.
func (d *Dir) Head() string { return d.head }

// ReadFile implements View.
func (d *Dir) ReadFile(p string) ([]byte, bool, error) {
	if err := checkPath(p); err != nil {
		return nil, false, err
	}
	// As Files, no link is followed: a link at p or on the way leaves p
	// absent.
	full := d.root
	var st fs.FileInfo
	for _, c := range strings.Split(p, "/") {
		full = filepath.Join(full, c)
		var err error
		st, err = os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || err == nil && st.Mode()&fs.ModeSymlink != 0 {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
	if !st.Mode().IsRegular() {
		return nil, false, nil
	}
	data, err := os.ReadFile(full)
	return data, err == nil, err
}

// Files implements View. Only regular files are read (symbolic links and
// the .git directory are skipped).
func (d *Dir) Files(dir string, skip func(p string, isDir bool) bool) (map[string][]byte, error) {
	out := map[string][]byte{}
	base := d.root
	if dir != "" {
		if err := checkPath(dir); err != nil {
			return nil, err
		}
		base = filepath.Join(d.root, filepath.FromSlash(dir))
	}
	err := filepath.WalkDir(base, func(full string, e fs.DirEntry, err error) error {
		if err != nil {
			if full == base && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		rel, err := filepath.Rel(d.root, full)
		if err != nil {
			return err
		}
		p := filepath.ToSlash(rel)
		if full == base {
			if !e.IsDir() {
				return fs.SkipAll // dir is a file: no files below it
			}
			return nil
		}
		if e.IsDir() {
			if e.Name() == ".git" || skip != nil && skip(p, true) {
				return fs.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() || e.Name() == ".git" || skip != nil && skip(path.Clean(p), false) {
			return nil
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return err
		}
		out[p] = data
		return nil
	})
	return out, err
}

// Close implements View; a Dir holds nothing.
func (d *Dir) Close() error { return nil }
