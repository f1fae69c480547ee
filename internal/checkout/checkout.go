// Package checkout confines writes and removals to a directory tree (a
// catalog checkout): every change goes through an os.Root, so that no path
// and no symbolic link can take it outside, and a symbolic link on the way
// to what is changed is refused with its path, since a committed link
// (rendered/ -> /somewhere) would otherwise make publish delete and write
// where the link points.
package checkout

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// LinkError says that a path below the checkout is a symbolic link, which
// publish does not write through.
type LinkError struct {
	Root, Path string // the checkout; the slash-separated path of the link
	Target     string // what it points to, as read
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link (to %q) in %s: publish writes only inside the checkout and not through links; commit a directory or file in its place",
		e.Path, e.Target, e.Root)
}

// Dir is an open checkout. Methods take slash-separated paths relative to
// it; absolute paths and ".." components are refused.
type Dir struct {
	path string
	root *os.Root
}

// Open opens the checkout at dir (os.OpenRoot). Close it when done.
func Open(dir string) (*Dir, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Dir{path: dir, root: r}, nil
}

// Close closes the checkout's root.
func (d *Dir) Close() error { return d.root.Close() }

// rel checks p (slash-separated, relative, no ".." component) and returns
// it cleaned, as an OS path.
func (d *Dir) rel(p string) (string, error) {
	if p == "" || path.IsAbs(p) || strings.Contains(p, `\`) {
		return "", fmt.Errorf("%q is not a relative path below %s", p, d.path)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "", fmt.Errorf("%q leaves %s (a \"..\" component)", p, d.path)
		}
	}
	return filepath.FromSlash(path.Clean(p)), nil
}

// NoLinks returns a *LinkError when p or a directory on the way to it is a
// symbolic link; components that do not exist end the check (nil).
func (d *Dir) NoLinks(p string) error {
	if _, err := d.rel(p); err != nil {
		return err
	}
	cur := ""
	for _, c := range strings.Split(path.Clean(p), "/") {
		if c == "." {
			continue
		}
		cur = path.Join(cur, c)
		fi, err := d.root.Lstat(filepath.FromSlash(cur))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil // nothing below: a file on the way is no link
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			t, _ := d.root.Readlink(filepath.FromSlash(cur))
			return &LinkError{Root: d.path, Path: cur, Target: t}
		}
	}
	return nil
}

// KindError says that what is at a path below the checkout is not what
// publish can write over: a directory, a named pipe (a write would wait
// for a reader for ever), a socket or a device where it writes a file, or
// anything but a directory where it writes a directory.
type KindError struct {
	Root, Path string // the checkout; the slash-separated path
	Is, Want   string // what is there; what publish writes there
}

func (e *KindError) Error() string {
	return fmt.Sprintf("%s is a %s in %s where publish writes a %s: remove it (publish writes only regular files and directories) and run again",
		e.Path, e.Is, e.Root, e.Want)
}

// kindOf names the kind of file of mode m.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "regular file"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file (" + m.Type().String() + ")"
}

// writable returns a *KindError unless the file p can be written once the
// regular files removed are gone (and the directories they leave empty):
// every directory on the way is one, absent, or a regular file removed;
// p is absent, a regular file, or a directory that holds only files
// removed.
func (d *Dir) writable(p string, removed map[string]bool) error {
	parts := strings.Split(path.Clean(p), "/")
	cur := ""
	for i, c := range parts {
		cur = path.Join(cur, c)
		fi, err := d.root.Lstat(filepath.FromSlash(cur))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		last := i == len(parts)-1
		switch m := fi.Mode(); {
		case m.IsRegular() && (last || removed[cur]):
			return nil
		case m.IsDir() && !last:
			continue
		case m.IsDir() && d.emptiedBy(cur, removed):
			return nil
		default:
			want := "directory"
			if last {
				want = "file"
			}
			return &KindError{Root: d.path, Path: cur, Is: kindOf(m), Want: want}
		}
	}
	return nil
}

// emptiedBy reports whether the directory dir holds nothing but
// directories and regular files of removed.
func (d *Dir) emptiedBy(dir string, removed map[string]bool) bool {
	ok := true
	fs.WalkDir(d.root.FS(), dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() && !(e.Type().IsRegular() && removed[p]) {
			ok = false
			return fs.SkipAll
		}
		return nil
	})
	return ok
}

// WriteFile writes data to p (mode 0644), making its directories (0755).
// A link on the way or at p is refused (*LinkError).
func (d *Dir) WriteFile(p string, data []byte) error {
	rp, err := d.rel(p)
	if err != nil {
		return err
	}
	if err := d.NoLinks(p); err != nil {
		return err
	}
	if dir := filepath.Dir(rp); dir != "." {
		if err := d.root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return d.root.WriteFile(rp, data, 0o644)
}

// ReadFile reads p inside the checkout (links that stay inside are
// followed; links out of it fail).
func (d *Dir) ReadFile(p string) ([]byte, error) {
	rp, err := d.rel(p)
	if err != nil {
		return nil, err
	}
	return d.root.ReadFile(rp)
}

// Remove removes the file or empty directory p; a link on the way is
// refused.
func (d *Dir) Remove(p string) error {
	rp, err := d.rel(p)
	if err != nil {
		return err
	}
	if err := d.NoLinks(path.Dir(p)); err != nil {
		return err
	}
	return d.root.Remove(rp)
}

// RemoveAll removes p and everything below it (nil when p does not
// exist); a link at p or on the way is refused.
func (d *Dir) RemoveAll(p string) error {
	rp, err := d.rel(p)
	if err != nil {
		return err
	}
	if err := d.NoLinks(p); err != nil {
		return err
	}
	return d.root.RemoveAll(rp)
}

// Sync replaces the files under each of dirs by files (slash-separated
// paths): every file under dirs not in files is removed, every file of
// files whose content differs is written, and directories left empty under
// dirs are removed. Files outside dirs are written without removing
// anything. A link at or on the way to any of dirs or files is refused
// before anything is changed (*LinkError).
func (d *Dir) Sync(dirs []string, files map[string][]byte) error {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range append(append([]string(nil), dirs...), paths...) {
		if err := d.NoLinks(p); err != nil {
			return err
		}
	}
	fsys := d.root.FS()
	for _, base := range dirs {
		base = path.Clean(base)
		err := fs.WalkDir(fsys, base, func(p string, e fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			if e.IsDir() {
				return nil
			}
			if _, keep := files[p]; !keep {
				// A link below the tree is removed itself, never followed.
				return d.root.Remove(filepath.FromSlash(p))
			}
			return nil
		})
		if err != nil {
			return err
		}
		d.removeEmptyDirs(base)
	}
	for _, p := range paths {
		if old, err := d.root.ReadFile(filepath.FromSlash(p)); err == nil && bytes.Equal(old, files[p]) {
			continue
		}
		if err := d.WriteFile(p, files[p]); err != nil {
			return err
		}
	}
	return nil
}

func (d *Dir) removeEmptyDirs(dir string) {
	entries, err := fs.ReadDir(d.root.FS(), dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			d.removeEmptyDirs(path.Join(dir, e.Name()))
		}
	}
	if entries, err := fs.ReadDir(d.root.FS(), dir); err == nil && len(entries) == 0 {
		d.root.Remove(filepath.FromSlash(dir))
	}
}

// Sync opens root and calls Dir.Sync.
func Sync(root string, dirs []string, files map[string][]byte) error {
	d, err := Open(root)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync(dirs, files)
}

// WriteFiles opens root and writes every file of files (Dir.WriteFile).
func WriteFiles(root string, files map[string][]byte) error {
	d, err := Open(root)
	if err != nil {
		return err
	}
	defer d.Close()
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := d.WriteFile(p, files[p]); err != nil {
			return err
		}
	}
	return nil
}

// RemoveAll opens root and calls Dir.RemoveAll.
func RemoveAll(root, p string) error {
	d, err := Open(root)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.RemoveAll(p)
}

// NoLinks opens root and returns the first *LinkError of paths
// (Dir.NoLinks).
func NoLinks(root string, paths ...string) error {
	d, err := Open(root)
	if err != nil {
		return err
	}
	defer d.Close()
	for _, p := range paths {
		if err := d.NoLinks(p); err != nil {
			return err
		}
	}
	return nil
}

// Apply opens root and checks, before anything is changed, that no path
// of writes, removes or clean is or goes through a symbolic link
// (*LinkError) and that every file of writes can be written once removes
// are gone (*KindError: a named pipe or a directory where a file is
// written, a file that stays where a directory is). It then removes each
// of removes (a file already gone is fine), removes below each directory
// of clean every entry that is neither a directory nor a regular file (a
// symbolic link, never followed; a named pipe), each with the directories
// it leaves empty, up to root, and writes every file of writes.
func Apply(root string, writes map[string][]byte, removes, clean []string) error {
	d, err := Open(root)
	if err != nil {
		return err
	}
	defer d.Close()
	paths := make([]string, 0, len(writes))
	for p := range writes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range append(append(append([]string(nil), removes...), clean...), paths...) {
		if err := d.NoLinks(p); err != nil {
			return err
		}
	}
	removed := make(map[string]bool, len(removes))
	for _, p := range removes {
		removed[path.Clean(p)] = true
	}
	for _, p := range paths {
		if err := d.writable(p, removed); err != nil {
			return err
		}
	}
	for _, p := range removes {
		if err := d.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		d.removeEmptyParents(p)
	}
	for _, dir := range clean {
		if err := d.removeOdd(dir); err != nil {
			return err
		}
	}
	for _, p := range paths {
		// A directory left where a file goes holds no file (writable).
		if fi, err := d.root.Lstat(filepath.FromSlash(path.Clean(p))); err == nil && fi.IsDir() {
			if err := d.RemoveAll(p); err != nil {
				return err
			}
		}
		if err := d.WriteFile(p, writes[p]); err != nil {
			return err
		}
	}
	return nil
}

// removeEmptyParents removes the directories of p that are empty, from
// the nearest up to root.
func (d *Dir) removeEmptyParents(p string) {
	for dir := path.Dir(path.Clean(p)); dir != "." && dir != "/"; dir = path.Dir(dir) {
		if entries, err := fs.ReadDir(d.root.FS(), dir); err != nil || len(entries) > 0 {
			return
		}
		if err := d.root.Remove(filepath.FromSlash(dir)); err != nil {
			return
		}
	}
}

// removeOdd removes below dir (nothing when it is absent or no directory)
// every entry that is neither a directory nor a regular file, never
// following a link, with the directories that leaves empty.
func (d *Dir) removeOdd(dir string) error {
	var odd []string
	err := fs.WalkDir(d.root.FS(), path.Clean(dir), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == path.Clean(dir) && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) {
				return fs.SkipAll
			}
			return err
		}
		if !e.IsDir() && !e.Type().IsRegular() {
			odd = append(odd, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range odd {
		if err := d.root.Remove(filepath.FromSlash(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		d.removeEmptyParents(p)
	}
	return nil
}
