package pipeline

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
)

// workspace is the catalog of one publish attempt: the branch tip read
// from Git objects (catalog.Tip, which also writes and pushes the commit)
// and a temporary directory holding the tip's files, where the target
// renders (its Render takes a directory). What the render leaves in the
// directory that differs from the tip becomes the commit's changes: no
// working tree, no index, no walk of the repo by the push. See
// docs/design.md, "The catalog".
type workspace struct {
	// Dir is the catalog root (--catalog-path) in the temporary directory.
	Dir string
	// base is what was written into Dir from the tip, by catalog path.
	base map[string][]byte
	// empty: the branch has no commit yet; newBranch: the repo has commits
	// but not on the branch.
	empty, newBranch bool
	// commit writes the commit of changes (relative to the catalog root):
	// its hash ("" when the tree did not change) and the files it changes,
	// sorted. push pushes it.
	commit func(changes []catalog.Change, co catalog.CommitOptions) (string, []string, error)
	push   func(ctx context.Context) error
	close  func() error
}

// openWorkspaceFor opens the workspace of each publish attempt:
// openWorkspace; the equivalence test swaps in the worktree clone that
// `run` used before, to compare the trees both leave.
var openWorkspaceFor = openWorkspace

// openWorkspace opens the tip of the catalog branch and writes every file
// of it below --catalog-path into a new temporary directory (the full
// read). Errors: those of catalog.OpenTip (*gitops.UnreachableError,
// *gitops.MissingBranchError, ...).
func openWorkspace(ctx context.Context, o gitops.Options) (*workspace, error) {
	tip, err := catalog.OpenTip(ctx, o)
	if err != nil {
		return nil, err
	}
	w := &workspace{empty: tip.Head() == "", newBranch: tip.NewBranch()}
	var written *catalog.Written
	w.commit = func(changes []catalog.Change, co catalog.CommitOptions) (string, []string, error) {
		var err error
		if written, err = tip.Commit(changes, co); err != nil || written.Commit.IsZero() {
			return "", nil, err
		}
		return written.Commit.String(), written.Files, nil
	}
	w.push = func(ctx context.Context) error {
		_, err := tip.Push(ctx, written)
		return err
	}
	w.close = tip.Close
	if w.Dir, err = os.MkdirTemp("", "publish-catalog-"); err != nil {
		tip.Close()
		return nil, err
	}
	if w.base, err = tip.Files("", nil); err == nil {
		err = writeFiles(w.Dir, w.base)
	}
	if err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Empty reports that the branch has no commit yet.
func (w *workspace) Empty() bool { return w.empty }

// Close removes the directory and closes the tip.
func (w *workspace) Close() error {
	err := os.RemoveAll(w.Dir)
	if cerr := w.close(); err == nil {
		err = cerr
	}
	return err
}

// writeFiles writes files (catalog paths) below root.
func writeFiles(root string, files map[string][]byte) error {
	for p, data := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// changes returns what makes the tip's catalog hold what Dir holds now: the
// files added or edited, and the files of the tip that are gone (Git keeps
// no empty directories), sorted by path.
func (w *workspace) changes() ([]catalog.Change, error) {
	now, err := dirFiles(w.Dir)
	if err != nil {
		return nil, err
	}
	var out []catalog.Change
	for p, data := range now {
		if old, ok := w.base[p]; !ok || !bytes.Equal(old, data) {
			out = append(out, catalog.Change{Path: p, Data: data})
		}
	}
	for p := range w.base {
		if _, ok := now[p]; !ok {
			out = append(out, catalog.Change{Path: p, Delete: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// withFile returns changes (sorted by path) with the change of file p
// to data, base being the tip's files: the one change of p is replaced,
// and none is kept when data is what the tip has.
func withFile(changes []catalog.Change, base map[string][]byte, p string, data []byte) []catalog.Change {
	out := make([]catalog.Change, 0, len(changes)+1)
	for _, c := range changes {
		if c.Path != p {
			out = append(out, c)
		}
	}
	if old, ok := base[p]; !ok || !bytes.Equal(old, data) {
		out = append(out, catalog.Change{Path: p, Data: data})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// dirFiles reads every regular file below root, by slash-separated path
// relative to root (symbolic links and .git skipped, as catalog.Dir does).
func dirFiles(root string) (map[string][]byte, error) {
	d, err := catalog.OpenDir(root)
	if err != nil {
		return nil, err
	}
	return d.Files("", nil)
}

// seedDir writes every file of tmpl (rooted at root inside tmpl) that dir
// lacks; files already there are never overwritten (gitops.Repo.Seed for a
// directory that is not a clone).
func seedDir(dir string, tmpl fs.FS, root string) error {
	return fs.WalkDir(tmpl, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if _, err := os.Stat(target); err == nil {
			return nil
		}
		data, err := fs.ReadFile(tmpl, p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
