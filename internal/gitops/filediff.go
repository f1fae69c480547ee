package gitops

import (
	"bytes"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// FileDiff compares two sets of files (repo-relative slash paths to
// content; a path missing from after is deleted, from before added) and
// returns the files that differ, sorted, and their unified diff in the
// format of `git diff` (go-git's unified encoder, as Preview uses).
// Identical files are left out; nothing differing is no files and "".
func FileDiff(before, after map[string][]byte) ([]FileChange, string, error) {
	paths := map[string]bool{}
	for p := range before {
		paths[p] = true
	}
	for p := range after {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	var files []FileChange
	var fps []fdiff.FilePatch
	for _, p := range sorted {
		old, hadOld := before[p]
		cur, hasNew := after[p]
		if hadOld && hasNew && bytes.Equal(old, cur) {
			continue
		}
		fp := &filePatch{}
		kind := "modified"
		switch {
		case !hadOld:
			kind = "added"
		case !hasNew:
			kind = "deleted"
		}
		if hadOld {
			fp.from = &patchFile{path: p, hash: plumbing.ComputeHash(plumbing.BlobObject, old)}
		}
		if hasNew {
			fp.to = &patchFile{path: p, hash: plumbing.ComputeHash(plumbing.BlobObject, cur)}
		}
		for _, d := range diff.Do(string(old), string(cur)) {
			op := fdiff.Equal
			switch d.Type {
			case diffmatchpatch.DiffInsert:
				op = fdiff.Add
			case diffmatchpatch.DiffDelete:
				op = fdiff.Delete
			}
			fp.chunks = append(fp.chunks, chunk{content: d.Text, op: op})
		}
		files = append(files, FileChange{Path: p, Change: kind})
		fps = append(fps, fp)
	}
	if len(files) == 0 {
		return nil, "", nil
	}
	var buf strings.Builder
	if err := fdiff.NewUnifiedEncoder(&buf, fdiff.DefaultContextLines).Encode(patch(fps)); err != nil {
		return nil, "", err
	}
	return files, buf.String(), nil
}

type patch []fdiff.FilePatch

func (p patch) FilePatches() []fdiff.FilePatch { return p }
func (p patch) Message() string                { return "" }

type filePatch struct {
	from, to *patchFile
	chunks   []fdiff.Chunk
}

func (f *filePatch) IsBinary() bool { return false }
func (f *filePatch) Files() (fdiff.File, fdiff.File) {
	var from, to fdiff.File
	if f.from != nil {
		from = f.from
	}
	if f.to != nil {
		to = f.to
	}
	return from, to
}
func (f *filePatch) Chunks() []fdiff.Chunk { return f.chunks }

type patchFile struct {
	path string
	hash plumbing.Hash
}

func (f *patchFile) Hash() plumbing.Hash     { return f.hash }
func (f *patchFile) Mode() filemode.FileMode { return filemode.Regular }
func (f *patchFile) Path() string            { return f.path }

type chunk struct {
	content string
	op      fdiff.Operation
}

func (c chunk) Content() string       { return c.content }
func (c chunk) Type() fdiff.Operation { return c.op }
