package catalog

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Change is one path of a catalog commit: new content for a file, or the
// removal of a file or of a whole directory.
type Change struct {
	// Path is slash-separated and relative to the catalog root (below
	// --catalog-path when there is one), e.g. "publish/state.yaml" or
	// "rendered/global/etcd".
	Path string
	// Data is the new content of the file at Path when Delete is false.
	Data []byte
	// Delete removes what is at Path: a file, or a directory and every file
	// below it. Removing a path that does not exist is not an error.
	Delete bool
}

// Replace returns the changes that make dirs hold exactly files: every
// directory of dirs is removed, then every file of files is written. It is
// what render.Files.Replace(dirs, files) does to a catalog in memory, so that a
// render's output can be committed from Git objects with the same result.
// Paths are relative to the catalog root.
func Replace(dirs []string, files map[string][]byte) []Change {
	out := make([]Change, 0, len(dirs)+len(files))
	for _, d := range dirs {
		out = append(out, Change{Path: d, Delete: true})
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		out = append(out, Change{Path: p, Data: files[p]})
	}
	return out
}

// CommitOptions is the message, identity and signature of a commit written
// from Git objects.
type CommitOptions struct {
	// Message is the whole commit message.
	Message string
	// Author and Committer name the commit (name, email and time: set
	// When; a zero When is the Unix epoch).
	Author, Committer object.Signature
	// Signer signs the commit as go-git's Worktree.Commit does
	// (gitops.NewSigner: OpenPGP or SSH); nil leaves it unsigned.
	Signer git.Signer
}

// Written is what WriteCommit wrote.
type Written struct {
	// Commit is the new commit; zero when the tree did not change (no
	// commit was written).
	Commit plumbing.Hash
	// Parent is the commit it was written on, zero for the first commit.
	Parent plumbing.Hash
	// Tree is the new root tree (the parent's when nothing changed).
	Tree plumbing.Hash
	// Objects are the objects written into the storer, the commit last:
	// exactly what the remote lacks when it has Parent (every tree and blob
	// that differs from the one at the same path of the parent's tree).
	Objects []plumbing.Hash
	// Files are the paths (relative to the catalog root) of the files
	// added, modified or removed, sorted.
	Files []string
}

// WriteCommit writes, into s, the tree of parent (zero: an empty repo or a
// new branch) with changes applied below prefix (--catalog-path, "" for
// the repo root), and a commit of it on parent. Deletions are applied
// first, then the writes (so a directory can be removed and written again
// in one call, as Replace does). Only the trees on the paths of changes are
// read; every other subtree keeps its hash; empty directories disappear, as
// in Git. Files are written with mode 100644, or keep the mode of the file
// they replace. When the new tree equals the parent's, nothing is written
// and Written.Commit is zero.
//
// Errors: a path that is absolute, has ".." or names .git, a path written
// twice or both as a file and as a directory, a parent that s lacks.
func WriteCommit(s storer.EncodedObjectStorer, parent plumbing.Hash, prefix string, changes []Change, o CommitOptions) (*Written, error) {
	w := &treeWriter{s: s}
	var oldRoot plumbing.Hash
	if !parent.IsZero() {
		c, err := object.GetCommit(s, parent)
		if err != nil {
			return nil, fmt.Errorf("reading the catalog commit %s: %w", parent, err)
		}
		oldRoot = c.TreeHash
	}
	root, err := w.plan(prefix, changes)
	if err != nil {
		return nil, err
	}
	tree, empty, err := w.build(oldRoot, root, "", false)
	if err != nil {
		return nil, err
	}
	if empty {
		if tree, err = w.encodeTree(nil, plumbing.ZeroHash); err != nil {
			return nil, err
		}
	}
	res := &Written{Parent: parent, Tree: tree}
	if tree == oldRoot {
		return res, nil
	}
	commit := &object.Commit{
		Author:    o.Author,
		Committer: o.Committer,
		Message:   o.Message,
		TreeHash:  tree,
	}
	if !parent.IsZero() {
		commit.ParentHashes = []plumbing.Hash{parent}
	}
	if o.Signer != nil {
		unsigned := &plumbing.MemoryObject{}
		if err := commit.EncodeWithoutSignature(unsigned); err != nil {
			return nil, err
		}
		r, err := unsigned.Reader()
		if err != nil {
			return nil, err
		}
		sig, err := o.Signer.Sign(r)
		if err != nil {
			return nil, fmt.Errorf("signing the catalog commit: %w", err)
		}
		commit.PGPSignature = string(sig)
	}
	obj := s.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return nil, err
	}
	h, err := s.SetEncodedObject(obj)
	if err != nil {
		return nil, err
	}
	res.Commit = h
	res.Objects = append(dedupe(w.written), h)
	if res.Files, err = changedFiles(s, oldRoot, tree, prefix); err != nil {
		return nil, err
	}
	return res, nil
}

// node is one path of the change set: a directory (kids) or a file write.
type node struct {
	del   bool // what was at this path is dropped first
	write bool // a file is written at this path (a leaf)
	data  []byte
	kids  map[string]*node
}

type treeWriter struct {
	s       storer.EncodedObjectStorer
	written []plumbing.Hash
}

// plan turns changes into a tree of nodes rooted at the repo root.
func (w *treeWriter) plan(prefix string, changes []Change) (*node, error) {
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		if err := checkPath(prefix); err != nil {
			return nil, fmt.Errorf("--catalog-path %q: %w", prefix, err)
		}
	}
	root := &node{}
	full := func(p string) string { return path.Join(prefix, p) }
	for _, c := range changes {
		if !c.Delete {
			continue
		}
		p := strings.TrimSuffix(c.Path, "/")
		if p == "" || p == "." {
			// The whole catalog root.
			n := root
			for _, part := range splitPath(prefix) {
				n = n.kid(part)
			}
			n.del, n.kids = true, nil
			continue
		}
		if err := checkPath(p); err != nil {
			return nil, fmt.Errorf("catalog change %q: %w", c.Path, err)
		}
		n := root
		for _, part := range splitPath(full(p)) {
			n = n.kid(part)
		}
		n.del, n.kids = true, nil
	}
	for _, c := range changes {
		if c.Delete {
			continue
		}
		if err := checkPath(c.Path); err != nil {
			return nil, fmt.Errorf("catalog change %q: %w", c.Path, err)
		}
		parts := splitPath(full(c.Path))
		n := root
		for i, part := range parts {
			if n.write {
				return nil, fmt.Errorf("catalog change %q: %s is also written as a file", c.Path, path.Join(parts[:i]...))
			}
			n = n.kid(part)
		}
		if n.write {
			return nil, fmt.Errorf("catalog change %q: written twice", c.Path)
		}
		if len(n.kids) > 0 {
			return nil, fmt.Errorf("catalog change %q: also written as a directory", c.Path)
		}
		n.write, n.data = true, c.Data
	}
	return root, nil
}

func (n *node) kid(name string) *node {
	if n.kids == nil {
		n.kids = map[string]*node{}
	}
	k := n.kids[name]
	if k == nil {
		k = &node{}
		n.kids[name] = k
	}
	return k
}

func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// checkPath refuses paths that would leave the tree or write into .git.
func checkPath(p string) error {
	if p == "" {
		return errors.New("empty path")
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || path.Clean(p) != p {
		return errors.New("want a clean relative slash-separated path")
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || part == "." || strings.EqualFold(part, ".git") {
			return errors.New("want a path inside the catalog (no .., no .git)")
		}
	}
	return nil
}

// build writes the directory at dir (repo-relative) whose old tree is old
// (zero: none) with the changes of n, and returns its hash; empty is true
// when the directory has no entries left (it is then not written). cleared
// says that a directory above was removed: the old tree is then only
// compared with, so that what is written again unchanged is not sent.
func (w *treeWriter) build(old plumbing.Hash, n *node, dir string, cleared bool) (plumbing.Hash, bool, error) {
	cleared = cleared || n.del
	prev := map[string]object.TreeEntry{}
	if !old.IsZero() {
		t, err := object.GetTree(w.s, old)
		if err != nil {
			return plumbing.ZeroHash, false, fmt.Errorf("reading the catalog tree %s (%s): %w", old, dirName(dir), err)
		}
		for _, e := range t.Entries {
			prev[e.Name] = e
		}
	}
	byName := map[string]object.TreeEntry{}
	if !cleared {
		for k, e := range prev {
			byName[k] = e
		}
	}
	for name, k := range n.kids {
		was, existed := prev[name]
		if k.write {
			h, err := w.blob(k.data)
			if err != nil {
				return plumbing.ZeroHash, false, err
			}
			mode := filemode.Regular
			if existed && !cleared && !k.del && was.Mode == filemode.Executable {
				mode = filemode.Executable
			}
			if !existed || was.Hash != h {
				w.written = append(w.written, h)
			}
			byName[name] = object.TreeEntry{Name: name, Mode: mode, Hash: h}
			continue
		}
		if k.del && len(k.kids) == 0 {
			delete(byName, name)
			continue
		}
		var base plumbing.Hash
		if existed && was.Mode == filemode.Dir {
			base = was.Hash
		}
		h, empty, err := w.build(base, k, path.Join(dir, name), cleared)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if empty {
			delete(byName, name)
			continue
		}
		byName[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
	}
	if len(byName) == 0 {
		return plumbing.ZeroHash, true, nil
	}
	entries := make([]object.TreeEntry, 0, len(byName))
	for _, e := range byName {
		entries = append(entries, e)
	}
	h, err := w.encodeTree(entries, old)
	return h, false, err
}

func dirName(d string) string {
	if d == "" {
		return "the root"
	}
	return d
}

func (w *treeWriter) blob(data []byte) (plumbing.Hash, error) {
	obj := w.s.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	wr, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := wr.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := wr.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	if h := obj.Hash(); w.s.HasEncodedObject(h) == nil {
		return h, nil
	}
	return w.s.SetEncodedObject(obj)
}

// encodeTree sorts entries as Git does and writes the tree unless its hash
// is old.
func (w *treeWriter) encodeTree(entries []object.TreeEntry, old plumbing.Hash) (plumbing.Hash, error) {
	sort.Slice(entries, func(i, j int) bool { return treeKey(entries[i]) < treeKey(entries[j]) })
	t := &object.Tree{Entries: entries}
	obj := w.s.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	h := obj.Hash()
	if h == old {
		return h, nil
	}
	if w.s.HasEncodedObject(h) != nil {
		if _, err := w.s.SetEncodedObject(obj); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	w.written = append(w.written, h)
	return h, nil
}

// treeKey orders tree entries as Git does: a directory compares as its name
// followed by "/".
func treeKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

func dedupe(hs []plumbing.Hash) []plumbing.Hash {
	seen := make(map[plumbing.Hash]bool, len(hs))
	out := hs[:0]
	for _, h := range hs {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// changedFiles lists the files (relative to the catalog root below prefix)
// that differ between the trees old (zero: none) and next, sorted. Only
// trees whose hashes differ are read (go-git's DiffTree reads every
// sibling of a changed path), so the cost grows with the change.
func changedFiles(s storer.EncodedObjectStorer, old, next plumbing.Hash, prefix string) ([]string, error) {
	var out []string
	if err := diffTrees(s, old, next, "", &out); err != nil {
		return nil, fmt.Errorf("listing the changed catalog files: %w", err)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		kept := out[:0]
		for _, p := range out {
			if r, ok := strings.CutPrefix(p, prefix+"/"); ok {
				kept = append(kept, r)
			}
		}
		out = kept
	}
	sort.Strings(out)
	return out, nil
}

// diffTrees appends to out the files that differ between the trees a and
// b (zero: none) at dir.
func diffTrees(s storer.EncodedObjectStorer, a, b plumbing.Hash, dir string, out *[]string) error {
	if a == b {
		return nil
	}
	entries := func(h plumbing.Hash) (map[string]object.TreeEntry, error) {
		m := map[string]object.TreeEntry{}
		if h.IsZero() {
			return m, nil
		}
		t, err := object.GetTree(s, h)
		if err != nil {
			return nil, err
		}
		for _, e := range t.Entries {
			m[e.Name] = e
		}
		return m, nil
	}
	ea, err := entries(a)
	if err != nil {
		return err
	}
	eb, err := entries(b)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for n := range ea {
		names[n] = true
	}
	for n := range eb {
		names[n] = true
	}
	for n := range names {
		x, inA := ea[n]
		y, inB := eb[n]
		if inA && inB && x.Hash == y.Hash && x.Mode == y.Mode {
			continue
		}
		p := path.Join(dir, n)
		var da, db plumbing.Hash
		fileA, fileB := inA && x.Mode != filemode.Dir, inB && y.Mode != filemode.Dir
		if inA && x.Mode == filemode.Dir {
			da = x.Hash
		}
		if inB && y.Mode == filemode.Dir {
			db = y.Hash
		}
		if fileA || fileB {
			*out = append(*out, p)
		}
		if !da.IsZero() || !db.IsZero() {
			if err := diffTrees(s, da, db, p, out); err != nil {
				return err
			}
		}
	}
	return nil
}
