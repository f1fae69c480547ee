package pipeline

import (
	"bytes"
	"context"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
)

// render renders next (the merged records of the scope's artifacts) and
// returns the changes to the catalog (relative to its root, sorted) and
// the render key to record. preview is `publish plan`: the target's
// Preview, which needs no registry write, and its warning. The way the
// scope was read renders (catalogReader).
func (s *scope) render(ctx context.Context, next []model.ArtifactRecord, preview bool) (changes []catalog.Change, key, warning string, err error) {
	return s.way.render(ctx, s, next, preview)
}

// stateFile returns publish/state.yaml after a publish of next from the
// source commit (repo, commit), with the render keys rendered and the OCI
// catalogs oci, keeping the approvals the state records: the whole
// state marshalled (full), or the tip's file with the touched artifacts'
// entries replaced (incremental), the same bytes either way.
func (s *scope) stateFile(src gitops.Source, next []model.ArtifactRecord, rendered map[string]string, oci map[string]gitops.OCIRecord) ([]byte, error) {
	return s.way.stateFile(&gitops.State{Source: src, Rendered: rendered, OCI: oci, Approvals: s.state.Approvals}, next)
}

// commit writes the commit of changes on the tip (catalog.Tip.Commit):
// its hash ("" when the tree did not change) and the files it changes.
func (s *scope) commit(changes []catalog.Change, co catalog.CommitOptions) (string, []string, error) {
	w, err := s.tip.Commit(changes, co)
	if err != nil || w.Commit.IsZero() {
		return "", nil, err
	}
	s.written = w
	return w.Commit.String(), w.Files, nil
}

// push pushes the commit written last (catalog.Tip.Push).
func (s *scope) push(ctx context.Context) error {
	_, err := s.tip.Push(ctx, s.written)
	return err
}

// withState returns changes (sorted by path) with the cluster's state file
// (gitops.StatePath) set to data, unless that is what the tip has.
func (s *scope) withState(changes []catalog.Change, data []byte) []catalog.Change {
	sp := gitops.StatePath(s.o.Cluster)
	out := make([]catalog.Change, 0, len(changes)+1)
	for _, c := range changes {
		if c.Path != sp {
			out = append(out, c)
		}
	}
	if s.oldState == nil || !bytes.Equal(s.oldState, data) {
		out = append(out, catalog.Change{Path: sp, Data: data})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// preview returns the plan's view of changes below rendered/<cluster>: the
// files that change (relative to the catalog) and their diff, with paths
// from the repo root as Git names them (below --catalog-path).
func (s *scope) preview(changes []catalog.Change) ([]gitops.FileChange, string, error) {
	prefix := render.RenderedDir + "/" + s.o.Cluster + "/"
	sub := strings.Trim(path.Clean("/"+filepath.ToSlash(s.o.Catalog.Path)), "/")
	repoPath := func(p string) string {
		if sub == "" {
			return p
		}
		return sub + "/" + p
	}
	before, after := render.Files{}, render.Files{}
	for _, c := range changes {
		if !strings.HasPrefix(c.Path, prefix) {
			continue
		}
		old, ok, err := s.tip.ReadFile(c.Path)
		if err != nil {
			return nil, "", err
		}
		if ok {
			before[repoPath(c.Path)] = old
		}
		if !c.Delete {
			after[repoPath(c.Path)] = c.Data
		}
	}
	files, patch, err := gitops.FileDiff(before, after)
	if err != nil {
		return nil, "", err
	}
	for i := range files {
		if sub != "" {
			files[i].Path = strings.TrimPrefix(files[i].Path, sub+"/")
		}
	}
	return files, patch, nil
}
