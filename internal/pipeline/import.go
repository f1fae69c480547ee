package pipeline

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
)

// ImportOptions are what `publish import` adds to the catalog options of
// Options (Catalog, Cluster, Render, Target, Log).
type ImportOptions struct {
	// Plan returns the state entries to add, given the catalog's state
	// (internal/importer.MakePlan); an error stops the import before
	// anything is written.
	Plan func(state *gitops.State) ([]model.ArtifactRecord, error)
	// BeforeCommit runs once the catalog is rendered and before it is
	// committed (import stages the package repo's manifests there); an
	// error stops the import with nothing committed.
	BeforeCommit func(ctx context.Context) error
	// DryRun renders and reports the files that would change, and
	// commits nothing (BeforeCommit is not called).
	DryRun bool
	// Describe is the body of the commit message (what was imported).
	Describe string
}

// ImportResult is what Import did, or would do on a dry run.
type ImportResult struct {
	// Files are the catalog files the commit changes (relative to the
	// catalog root), sorted; the state file among them.
	Files []string
	// Commit is the catalog commit pushed ("" on a dry run or when nothing
	// changed).
	Commit string
}

// Import adds imported state entries to the catalog and renders them,
// through the same engine as `publish push --catalog`: the catalog
// branch tip read whole (openCatalogScope, which seeds a first publish
// from the template), the target's render of the state's artifacts and
// the new ones into rendered/<cluster> (the alauda target names each
// ArtifactVersion after its recorded ObjectName), and one commit with the
// state file, pushed with compare-and-swap. The source commit of the
// state is kept: the next `publish run` reads every version of the
// package repo. Entries of artifacts the state already has are an error
// (the plan leaves them out). Nothing is written when the plan fails, on
// a dry run, or when BeforeCommit fails.
func Import(ctx context.Context, o Options, im ImportOptions) (*ImportResult, error) {
	o.defaults()
	tgt, err := o.newTarget()
	if err != nil {
		return nil, err
	}
	if err := tgt.Check(); err != nil {
		return nil, err
	}
	s, err := openCatalogScope(ctx, o, tgt)
	if err != nil {
		return nil, err
	}
	defer func() { s.Close() }()
	state := s.state
	arts, err := im.Plan(state)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, a := range state.Artifacts {
		have[a.Name] = true
	}
	next := append([]model.ArtifactRecord(nil), state.Artifacts...)
	for _, a := range arts {
		if have[a.Name] {
			return nil, inputErr(fmt.Errorf("artifact %s is already in the catalog's %s: import does not change it", a.Name, gitops.StatePath(o.Cluster)))
		}
		next = append(next, a)
	}
	model.SortRecords(next)
	res := &ImportResult{}
	if len(arts) == 0 {
		o.logf("import: nothing to import")
		return res, nil
	}
	changes, key, _, err := s.render(ctx, next, false)
	if err != nil {
		return nil, err
	}
	rendered := map[string]string{}
	for c, k := range state.Rendered {
		rendered[c] = k
	}
	rendered[o.Cluster] = key
	data, err := s.stateFile(state.Source, next, rendered, state.OCI)
	if err != nil {
		return nil, err
	}
	// stateFile validates what Marshal writes only when it is read back:
	// an import that the next run could not read is refused here.
	if _, err := gitops.ParseState(gitops.StatePath(o.Cluster), data); err != nil {
		return nil, inputErr(err)
	}
	changes = s.withState(changes, data)
	for _, c := range changes {
		res.Files = append(res.Files, c.Path)
	}
	if im.DryRun {
		return res, nil
	}
	if im.BeforeCommit != nil {
		if err := im.BeforeCommit(ctx); err != nil {
			return nil, err
		}
	}
	var names []string
	for _, a := range arts {
		names = append(names, a.Name)
	}
	msg := fmt.Sprintf("publish: import %d artifacts from the cluster (%s)\n", len(arts), strings.Join(names, ", "))
	if im.Describe != "" {
		msg += "\n" + im.Describe
	}
	hash, files, err := s.commit(changes, catalog.CommitOptionsFor(o.Catalog, msg, time.Now()))
	if err != nil {
		return nil, fmt.Errorf("committing catalog: %w", err)
	}
	res.Files = files
	if hash == "" {
		return res, nil
	}
	o.logf("catalog: pushing %s to %s", hash[:12], o.Catalog.Branch)
	if err := s.push(ctx); err != nil {
		return nil, err
	}
	res.Commit = hash
	o.logf("catalog: committed %s and pushed to %s (%d files)", hash[:12], o.Catalog.Branch, len(res.Files))
	return res, nil
}
