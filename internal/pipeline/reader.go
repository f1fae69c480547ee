package pipeline

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"sort"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/target"
)

// catalogReader is one of the two ways a scope reads the catalog tip and
// renders on it (docs/design.md, "The engine"): fullRead or
// incrementalRead. decide picks one before any manifest is read; the scope
// asks it everything that differs between the two, and nothing else
// compares the ways.
type catalogReader interface {
	// render renders next (the merged records of the artifacts read) and
	// returns the changes to the catalog (paths relative to its root,
	// sorted), the render key to record and, with preview (`publish plan`:
	// the target's Preview, no registry write), the plan's warning.
	render(ctx context.Context, s *scope, next []model.ArtifactRecord, preview bool) (changes []catalog.Change, key, warning string, err error)
	// stateFile returns the cluster's state file with header's fields and
	// the entries next: the same bytes either way.
	stateFile(header *gitops.State, next []model.ArtifactRecord) ([]byte, error)
	// coversAll reports whether the scope holds every artifact of the
	// published state.
	coversAll() bool
	// names adds to names the artifacts the published state holds that the
	// reader knows without reading them.
	names(into map[string]bool)
	// published returns the published record of an artifact the reader
	// did not read (what the cluster keeps listing of it, for
	// dependency/missing), ok false for one it read or the state does not
	// hold: none on the full way, which reads every artifact; an
	// untouched artifact's state entry on the incremental way, parsed on
	// demand. The error is that of an entry that does not parse.
	published(name string) (a model.ArtifactRecord, ok bool, err error)
	// warnsUnmatched reports whether a selection pattern that matches no
	// artifact is worth a warning: only a reader that knows every artifact
	// can tell.
	warnsUnmatched() bool
	// scanned is the log line of the manifests read.
	scanned(o Options, n int) string
	// reread reads the branch's new tip (s.tip, replaced by the caller)
	// after a rejected push; the versions read and mirrored stay.
	reread(ctx context.Context, s *scope) error
}

// fullRead is the full way: every manifest read, the whole tip read into
// memory (the scope's cat), where the target renders; what differs from
// base becomes the commit.
type fullRead struct {
	// base is the tip's catalog as read.
	base render.Files
	// links are the symbolic links and submodules below the directories
	// publish writes whole for the cluster (renderedDirs), which base
	// leaves out: the commit removes them.
	links []string
}

func (r *fullRead) render(ctx context.Context, s *scope, next []model.ArtifactRecord, preview bool) ([]catalog.Change, string, string, error) {
	// A changed artifact selection renders the cluster whole.
	prevKey := s.state.Rendered[s.o.Cluster]
	if s.o.renderKey(targetKey(prevKey)) != prevKey {
		prevKey = ""
	}
	prevKey = targetKey(prevKey)
	if len(r.links) > 0 {
		prevKey = "" // entries no render wrote: render the cluster whole
	}
	var key, warning string
	var err error
	if preview {
		warning, err = s.tgt.Preview(s.cat, next, prevKey)
	} else {
		key, err = s.tgt.Render(ctx, s.cat, next, prevKey)
		key = s.o.renderKey(key)
	}
	if err != nil {
		return nil, "", "", err
	}
	changes := s.cat.Changes(r.base)
	for _, l := range r.links {
		changes = append(changes, catalog.Change{Path: l, Delete: true})
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes, key, warning, nil
}

func (r *fullRead) stateFile(header *gitops.State, next []model.ArtifactRecord) ([]byte, error) {
	header.Artifacts = next
	return header.Marshal()
}

func (r *fullRead) coversAll() bool       { return true }
func (r *fullRead) names(map[string]bool) {}
func (r *fullRead) warnsUnmatched() bool  { return true }
func (r *fullRead) published(string) (model.ArtifactRecord, bool, error) {
	return model.ArtifactRecord{}, false, nil
}
func (r *fullRead) reread(_ context.Context, s *scope) error {
	return s.readCatalog(r)
}

func (r *fullRead) scanned(o Options, n int) string {
	return fmt.Sprintf("scan: %d package manifests in %s", n, filepath.Join(o.Source, o.PackagesDir))
}

// incrementalRead is the incremental way: only the artifacts a change
// touches are read and rendered, from the Git objects of the tip.
type incrementalRead struct {
	// idx is the state split by artifact; key the render key of the
	// overlays, equal to the recorded one.
	idx *gitops.StateIndex
	key string
	// touched names the artifacts read.
	touched map[string]bool
}

func (r *incrementalRead) render(_ context.Context, s *scope, next []model.ArtifactRecord, _ bool) ([]catalog.Change, string, string, error) {
	changes, err := s.tgt.(target.Incremental).RenderArtifacts(s.tip, s.cat, next)
	return changes, r.key, "", err
}

func (r *incrementalRead) stateFile(header *gitops.State, next []model.ArtifactRecord) ([]byte, error) {
	return r.idx.Marshal(header, next)
}

func (r *incrementalRead) coversAll() bool {
	for _, n := range r.idx.Names() {
		if !r.touched[n] {
			return false
		}
	}
	return true
}

func (r *incrementalRead) names(into map[string]bool) {
	for _, n := range r.idx.Names() {
		into[n] = true
	}
}

func (r *incrementalRead) warnsUnmatched() bool { return false }

func (r *incrementalRead) published(name string) (model.ArtifactRecord, bool, error) {
	if r.touched[name] {
		return model.ArtifactRecord{}, false, nil
	}
	return r.idx.Artifact(name)
}

func (r *incrementalRead) scanned(_ Options, n int) string {
	return fmt.Sprintf("scan: %d package manifests of the %d artifacts the change touches (the others stay as published)", n, len(r.touched))
}

// reread judges the new tip's overlays and state again: a tip that no
// longer allows the incremental way is an error saying to run again
// (nothing was written).
func (r *incrementalRead) reread(_ context.Context, s *scope) error {
	var f facts
	next, err := s.catalogFacts(&f)
	if err != nil {
		return err
	}
	if w, reason := decide(f); w == wayFull {
		return fmt.Errorf("the catalog branch %s moved on during this run and %s: nothing was pushed; run publish again", s.o.Catalog.Branch, reason)
	}
	r.idx, r.key = next.idx, next.key
	return s.readTouched(r)
}

// selectionWarnings warns, for a reader that knows every artifact, of each
// include or exclude pattern of the cluster that matches none of names.
func selectionWarnings(o Options, names map[string]bool) {
	c := o.cluster
	for field, ps := range map[string][]string{"include": c.Include, "exclude": c.Exclude} {
		for _, p := range ps {
			hit := false
			for n := range names {
				if ok, _ := path.Match(p, n); ok {
					hit = true
					break
				}
			}
			if !hit {
				o.warnf("publish.yaml clusters.%s.%s: pattern %q matches no artifact", c.Name, field, p)
			}
		}
	}
}
