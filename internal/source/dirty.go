package source

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/operator-publish/publish/internal/manifest"
)

// Dirty is what of the package repo's working tree differs from its HEAD
// commit below one directory.
type Dirty struct {
	// Paths are the manifest files (manifest.FileName) whose content on
	// disk is not HEAD's: edited, staged (git add) or not, and new files,
	// tracked or not. Relative to Dir, slash-separated, sorted.
	Paths []string
	// Suspect is the first path the full scan reports instead of reading
	// (manifest.Suspect: a directory or link named manifest.yaml, a
	// manifest.yml), "" for none.
	Suspect string
}

// Dirty compares the manifests below root (a directory inside Dir) on disk
// with the HEAD commit: the one answer to "what would a run publish that is
// in no commit", for every command and both ways of the engine. It costs
// what `git status` costs: the index is the stat cache (a tracked file whose
// size and time match its entry has the entry's content, the others are
// hashed), a directory is listed only when it changed after the index was
// written or is new, and the index is compared with HEAD by tree hashes
// computed from its entries, descending only where they differ, so that a
// staged change counts without reading every tree of HEAD.
//
// Outside a Git repository every manifest is new: Dirty returns an error
// wrapping NotGit. Errors are for an index, object or file that cannot be
// read.
func (r *Repo) Dirty(root string) (*Dirty, error) {
	if r.git == nil {
		return nil, r.openErr
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if d, err := filepath.EvalSymlinks(absRoot); err == nil {
		absRoot = d
	}
	rootRel, err := filepath.Rel(r.dir, absRoot)
	if err != nil || rootRel == ".." || strings.HasPrefix(rootRel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("%s is not below the package repo %s", root, r.dir)
	}
	d := &dirtyScan{r: r, rootRel: filepath.ToSlash(rootRel), tracked: map[string]bool{}, dirs: map[string]bool{}}
	if err := d.run(); err != nil {
		return nil, err
	}
	sort.Strings(d.out.Paths)
	return &d.out, nil
}

// dirtyScan is one call of Dirty. Paths are relative to Repo.dir unless
// named git (relative to the worktree root, as the index names them).
type dirtyScan struct {
	r       *Repo
	rootRel string // root relative to dir, "." for dir itself
	// head holds, for the files below root where the index and HEAD
	// differ, HEAD's blob (zero: HEAD lacks it).
	head    map[string]plumbing.Hash
	tracked map[string]bool // every index entry below root
	dirs    map[string]bool // their directories, root included
	indexAt time.Time       // when the index was written
	out     Dirty
}

func (d *dirtyScan) below(rel string) bool {
	return d.rootRel == "." || rel == d.rootRel || strings.HasPrefix(rel, d.rootRel+"/")
}

func (d *dirtyScan) run() error {
	idx, err := d.r.git.Storer.Index()
	if err != nil {
		return fmt.Errorf("reading the package repo's index: %w", err)
	}
	if d.indexAt, err = d.indexTime(); err != nil {
		return err
	}
	if err := d.staged(idx); err != nil {
		return err
	}
	for _, e := range idx.Entries {
		rel, ok := strings.CutPrefix(e.Name, d.r.prefix)
		if !ok || !d.below(rel) {
			continue
		}
		d.tracked[rel] = true
		for dir := path.Dir(rel); d.below(dir) && !d.dirs[dir]; dir = path.Dir(dir) {
			d.dirs[dir] = true
			if dir == d.rootRel || dir == "." {
				break
			}
		}
		if path.Base(rel) != manifest.FileName {
			continue
		}
		if e.Stage != stageMerged {
			d.out.Paths = append(d.out.Paths, rel) // a conflict: in no commit
			continue
		}
		if err := d.checkTracked(rel, e); err != nil {
			return err
		}
	}
	d.dirs[d.rootRel] = true
	// Files HEAD has that the index lacks (git rm --cached): compared with
	// HEAD when they are on disk.
	for rel, h := range d.head {
		if !d.tracked[rel] && !h.IsZero() && path.Base(rel) == manifest.FileName {
			if err := d.checkUntracked(rel); err != nil {
				return err
			}
		}
	}
	return d.listNew()
}

// indexTime is the modification time of the index file, read through the
// repository's own file system (a linked worktree keeps its index in its
// own Git directory, not in the worktree's .git, which is a file).
func (d *dirtyScan) indexTime() (time.Time, error) {
	st, ok := d.r.git.Storer.(*filesystem.Storage)
	if !ok {
		return time.Time{}, errors.New("the package repo is not stored on disk")
	}
	info, err := st.Filesystem().Stat("index")
	if errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, nil // no index yet: every directory is listed
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the package repo's index: %w", err)
	}
	return info.ModTime(), nil
}

// checkTracked compares a tracked manifest on disk with HEAD's content.
func (d *dirtyScan) checkTracked(rel string, e *index.Entry) error {
	want, differs := d.head[rel]
	if !differs {
		want = e.Hash
	}
	full := filepath.Join(d.r.dir, filepath.FromSlash(rel))
	info, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed without a commit: the scan of recorded paths sees it
	}
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		d.suspect(rel)
		return nil
	}
	got := e.Hash
	if uint32(info.Size()) != e.Size || !info.ModTime().Equal(e.ModifiedAt) {
		if got, err = blobHash(full); err != nil {
			return err
		}
	}
	if got != want {
		d.out.Paths = append(d.out.Paths, rel)
	}
	return nil
}

// checkUntracked compares a manifest the index does not track with HEAD's
// content (d.head; absent: new).
func (d *dirtyScan) checkUntracked(rel string) error {
	full := filepath.Join(d.r.dir, filepath.FromSlash(rel))
	info, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		d.suspect(rel)
		return nil
	}
	got, err := blobHash(full)
	if err != nil {
		return err
	}
	if want, ok := d.head[rel]; !ok || want != got {
		d.out.Paths = append(d.out.Paths, rel)
	}
	d.tracked[rel] = true
	return nil
}

func (d *dirtyScan) suspect(rel string) {
	if d.out.Suspect == "" {
		d.out.Suspect = rel
	}
}

// listNew lists the directories that changed after the index was written,
// or are new, for the files the index lacks.
func (d *dirtyScan) listNew() error {
	dirs := make([]string, 0, len(d.dirs))
	for dir := range d.dirs {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		full := filepath.Join(d.r.dir, filepath.FromSlash(dir))
		info, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !info.IsDir() || info.ModTime().Before(d.indexAt) {
			continue // unchanged since the index was written: nothing new in it
		}
		des, err := os.ReadDir(full)
		if err != nil {
			return err
		}
		for _, de := range des {
			rel := path.Join(dir, de.Name())
			if dir == "." {
				rel = de.Name()
			}
			if d.tracked[rel] || d.dirs[rel] {
				continue
			}
			if err := d.walkNew(rel); err != nil {
				return err
			}
		}
	}
	return nil
}

// walkNew walks an entry the index lacks: a new file, or a new directory.
func (d *dirtyScan) walkNew(rel string) error {
	return filepath.WalkDir(filepath.Join(d.r.dir, filepath.FromSlash(rel)), func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, err := filepath.Rel(d.r.dir, p)
		if err != nil {
			return err
		}
		r = filepath.ToSlash(r)
		switch {
		case de.IsDir() && de.Name() == ".git":
			return filepath.SkipDir
		case manifest.Suspect(de.Name(), de.Type()):
			d.suspect(r)
			return filepath.SkipDir
		case de.Type().IsRegular() && de.Name() == manifest.FileName && !d.tracked[r]:
			return d.checkUntracked(r)
		}
		return nil
	})
}

func blobHash(file string) (plumbing.Hash, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return plumbing.ComputeHash(plumbing.BlobObject, data), nil
}

// staged fills d.head: where the index below root differs from HEAD's
// tree. It builds the tree hashes of the index's entries below root, as
// `git write-tree` would, and compares them with HEAD's, descending only
// into directories whose hashes differ.
func (d *dirtyScan) staged(idx *index.Index) error {
	d.head = map[string]plumbing.Hash{}
	gitRoot := strings.TrimSuffix(d.r.prefix+d.rootRel, "/.")
	if d.rootRel == "." {
		gitRoot = strings.TrimSuffix(d.r.prefix, "/")
	}
	top := &idxDir{dirs: map[string]*idxDir{}, files: map[string]*index.Entry{}}
	for _, e := range idx.Entries {
		name := e.Name
		if gitRoot != "" {
			var ok bool
			if name, ok = strings.CutPrefix(e.Name, gitRoot+"/"); !ok {
				continue
			}
		}
		top.add(strings.Split(name, "/"), e)
	}
	top.hash()
	var headTree *object.Tree
	if ref, err := d.r.git.Head(); err == nil {
		c, err := d.r.git.CommitObject(ref.Hash())
		if err != nil {
			return fmt.Errorf("reading the package repo's HEAD commit %s: %w", ref.Hash(), err)
		}
		if headTree, err = c.Tree(); err != nil {
			return fmt.Errorf("reading the tree of the package repo's HEAD commit %s: %w", ref.Hash(), err)
		}
		if gitRoot != "" {
			headTree, err = headTree.Tree(gitRoot)
			if errors.Is(err, object.ErrDirectoryNotFound) {
				headTree = nil
			} else if err != nil {
				return fmt.Errorf("reading %s at the package repo's HEAD: %w", gitRoot, err)
			}
		}
	} else if !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return fmt.Errorf("reading the package repo's HEAD: %w", err)
	}
	return d.compare(d.rootRel, top, headTree)
}

// compare records in d.head the files below dir (relative to Repo.dir)
// where the index (ix) and HEAD (ht, nil: absent) differ.
func (d *dirtyScan) compare(dir string, ix *idxDir, ht *object.Tree) error {
	join := func(n string) string {
		if dir == "." {
			return n
		}
		return dir + "/" + n
	}
	if ht != nil && ix.sum == ht.Hash {
		return nil
	}
	seen := map[string]bool{}
	if ht != nil {
		for _, te := range ht.Entries {
			seen[te.Name] = true
			switch {
			case te.Mode == filemode.Dir:
				sub, err := ht.Tree(te.Name)
				if err != nil {
					return fmt.Errorf("reading %s at the package repo's HEAD: %w", join(te.Name), err)
				}
				child := ix.dirs[te.Name]
				if child == nil {
					if err := d.compare(join(te.Name), &idxDir{}, sub); err != nil {
						return err
					}
					continue
				}
				if child.sum != te.Hash {
					if err := d.compare(join(te.Name), child, sub); err != nil {
						return err
					}
				}
				if f := ix.files[te.Name]; f != nil {
					d.head[join(te.Name)] = plumbing.ZeroHash
				}
			default:
				if f := ix.files[te.Name]; f == nil || f.Hash != te.Hash {
					d.head[join(te.Name)] = te.Hash
				}
				if ix.dirs[te.Name] != nil {
					d.addAll(join(te.Name), ix.dirs[te.Name])
				}
			}
		}
	}
	for n, c := range ix.dirs {
		if !seen[n] {
			d.addAll(join(n), c)
		}
	}
	for n := range ix.files {
		if !seen[n] {
			d.head[join(n)] = plumbing.ZeroHash
		}
	}
	return nil
}

// addAll records every file of ix below dir as absent from HEAD.
func (d *dirtyScan) addAll(dir string, ix *idxDir) {
	for n := range ix.files {
		d.head[dir+"/"+n] = plumbing.ZeroHash
	}
	for n, c := range ix.dirs {
		d.addAll(dir+"/"+n, c)
	}
}

// idxDir is one directory of the index, for its tree hash.
type idxDir struct {
	dirs  map[string]*idxDir
	files map[string]*index.Entry
	sum   plumbing.Hash
}

func (x *idxDir) add(parts []string, e *index.Entry) {
	if len(parts) == 1 {
		if e.Stage == stageMerged {
			x.files[parts[0]] = e
		} else if x.files[parts[0]] == nil {
			// A conflict has no one blob: a zero hash differs from
			// HEAD's, and the file is reported (Dirty).
			x.files[parts[0]] = &index.Entry{Name: e.Name, Mode: e.Mode}
		}
		return
	}
	c := x.dirs[parts[0]]
	if c == nil {
		c = &idxDir{dirs: map[string]*idxDir{}, files: map[string]*index.Entry{}}
		x.dirs[parts[0]] = c
	}
	c.add(parts[1:], e)
}

// hash computes the tree hashes of x and its directories, encoded as Git
// encodes a tree object (go-git's object.Tree encoder, entries in Git's
// order: a directory sorts as its name with a trailing '/').
func (x *idxDir) hash() plumbing.Hash {
	t := &object.Tree{}
	for n, c := range x.dirs {
		t.Entries = append(t.Entries, object.TreeEntry{Name: n, Mode: filemode.Dir, Hash: c.hash()})
	}
	for n, f := range x.files {
		t.Entries = append(t.Entries, object.TreeEntry{Name: n, Mode: f.Mode, Hash: f.Hash})
	}
	sort.Slice(t.Entries, func(i, j int) bool {
		return treeKey(t.Entries[i]) < treeKey(t.Entries[j])
	})
	obj := &plumbing.MemoryObject{}
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash // a memory object does not fail to write
	}
	x.sum = obj.Hash()
	return x.sum
}

func treeKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

// stageMerged is the stage of an index entry without a conflict: 0 in
// Git's index format (go-git's index.Merged is 1, the ancestor's stage).
const stageMerged index.Stage = 0
