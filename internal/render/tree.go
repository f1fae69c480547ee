package render

import (
	"bytes"
	"path"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/checkout"
)

// A catalog in memory is a Files: every regular file of the catalog by its
// slash-separated path relative to the catalog root, as catalog.View.Files
// returns it (no .git, no symbolic links). The render reads and writes it
// in memory; only `publish render` and `publish check`, which work on a
// checkout, read one from disk (ReadDir) and write back what changed
// (SyncDir).

// Clone returns a copy of f; the contents are shared, since the render
// replaces a file's bytes and never edits them in place.
func (f Files) Clone() Files {
	out := make(Files, len(f))
	for p, data := range f {
		out[p] = data
	}
	return out
}

// Under returns the files of f below dir, by their paths relative to the
// catalog root.
func (f Files) Under(dir string) Files {
	prefix := strings.TrimSuffix(dir, "/") + "/"
	out := Files{}
	for p, data := range f {
		if strings.HasPrefix(p, prefix) {
			out[p] = data
		}
	}
	return out
}

// HasDir reports whether f holds a file below dir (a catalog, like Git,
// has no empty directory).
func (f Files) HasDir(dir string) bool {
	prefix := strings.TrimSuffix(dir, "/") + "/"
	for p := range f {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// Replace replaces the files of f below each of dirs by those of files
// below it, and sets every other file of files, in memory: what syncing a
// checkout's directories does to it. A file where one of dirs, or a
// directory on the way to a file set, must be goes (as a checkout would
// replace it), so that f stays a tree Git can hold.
func (f Files) Replace(dirs []string, files Files) {
	for _, d := range dirs {
		d = strings.TrimSuffix(d, "/")
		delete(f, d)
		prefix := d + "/"
		for p := range f {
			if strings.HasPrefix(p, prefix) {
				if _, keep := files[p]; !keep {
					delete(f, p)
				}
			}
		}
	}
	for p, data := range files {
		for dir := path.Dir(p); dir != "." && dir != "/"; dir = path.Dir(dir) {
			delete(f, dir)
		}
		f[p] = data
	}
}

// Changes returns what turns the catalog base into f: a write of each file
// new or changed, a removal of each file gone; sorted by path.
func (f Files) Changes(base Files) []catalog.Change {
	var out []catalog.Change
	for p, data := range f {
		if old, ok := base[p]; !ok || !bytes.Equal(old, data) {
			out = append(out, catalog.Change{Path: p, Data: data})
		}
	}
	for p := range base {
		if _, ok := f[p]; !ok {
			out = append(out, catalog.Change{Path: p, Delete: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// walkOrder returns the paths of f in the order filepath.WalkDir visits
// them on disk: by name within each directory, a directory's files where
// its name falls among its siblings. The render key hashes the files in
// this order, so that keys recorded from a checkout stay valid.
func (f Files) walkOrder() []string {
	paths := make([]string, 0, len(f))
	for p := range f {
		paths = append(paths, p)
	}
	// With "/" replaced by a byte below every other, plain string order is
	// the order of names segment by segment.
	key := func(p string) string { return strings.ReplaceAll(p, "/", "\x00") }
	sort.Slice(paths, func(i, j int) bool { return key(paths[i]) < key(paths[j]) })
	return paths
}

// ReadDir reads the catalog checkout at root into memory: every regular
// file, .git and symbolic links left out (catalog.OpenDir).
func ReadDir(root string) (Files, error) {
	d, err := catalog.OpenDir(root)
	if err != nil {
		return nil, err
	}
	files, err := d.Files("", nil)
	return Files(files), err
}

// SyncDir makes the checkout at root, read earlier as base (ReadDir), hold
// now: the files gone are removed (and the directories they leave empty),
// the files new or changed are written. Below each of clean, the
// directories the render replaced whole (rendered/<cluster>,
// publish/generated/<cluster>), what base could not hold (a symbolic
// link, a named pipe) goes too, as a stale file goes. Every change stays
// inside root and none goes through a symbolic link
// (*checkout.LinkError); what cannot be written over (a named pipe or a
// directory where a file is written: *checkout.KindError) is refused
// before anything changes.
func SyncDir(root string, base, now Files, clean ...string) error {
	writes := map[string][]byte{}
	var removes []string
	for _, c := range now.Changes(base) {
		if c.Delete {
			removes = append(removes, c.Path)
		} else {
			writes[c.Path] = c.Data
		}
	}
	return checkout.Apply(root, writes, removes, clean)
}
