package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/ocicatalog"
	"github.com/operator-publish/publish/internal/render"
)

// renderCluster renders the scope's artifacts (scope.render) and pushes
// the cluster's OCI catalog (before any commit: a failed push commits
// nothing). It returns the changes of the cluster's commit, its state file
// included, or nil when no byte of the cluster changes.
func renderCluster(ctx context.Context, r *run, s *scope, current []model.ArtifactRecord, res *Result) ([]catalog.Change, error) {
	o := r.Options
	state := s.state
	next := render.Merge(state.Artifacts, current)
	res.Changes = render.Diff(state.Artifacts, next)
	o.logf("render: %s/%s", render.RenderedDir, o.Cluster)
	changes, key, _, err := s.render(ctx, next, false)
	if err != nil {
		return nil, err
	}
	opts := r.dstOpts
	if opts == nil && r.mc != nil {
		opts = r.mc.DstOptions()
	}
	rewritten, err := rewriteCharts(ctx, o, r.mc, opts, next, model.ChangedVersions(s.vs))
	if err != nil {
		return nil, err
	}
	if cr := o.Render.ChartRepo; cr.URL != "" {
		if err := uploadCharts(ctx, r.mc, cr, o.ChartRepoAuth, state.Artifacts, next, model.ChangedVersions(s.vs), rewritten, o.logf); err != nil {
			return nil, fmt.Errorf("%w; nothing committed", err)
		}
	} else {
		charts, err := chartSources(s.tip, o.Cluster, next, s.vs, rewritten)
		if err != nil {
			return nil, err
		}
		changes = append(changes, charts...)
	}
	res.Changes.Updated = updatedInCatalog(res.Changes, updatedVersions(res.Diff, r.dirty, state.Artifacts, next), changes, o.Cluster, state.Artifacts, next)
	rendered := map[string]string{o.Cluster: key}
	commit, origin := o.sourceCommit()
	src := gitops.Source{Repo: origin, Commit: commit, Dirty: r.dirtyPaths}
	unchanged := len(changes) == 0 && sameArtifacts(state.Artifacts, next) && state.Rendered[o.Cluster] == key &&
		strings.Join(state.Source.Dirty, "\n") == strings.Join(src.Dirty, "\n")
	oci, err := r.pushOCI(ctx, s, changes, unchanged, gitops.Source{Repo: origin, Commit: commit}, res)
	if err != nil {
		return nil, err
	}
	var ociRecords map[string]gitops.OCIRecord
	if oci != nil {
		ociRecords = map[string]gitops.OCIRecord{o.Cluster: *oci}
	}
	if prev, had := state.OCI[o.Cluster]; unchanged && (oci == nil && !had || oci != nil && had && prev == *oci) {
		o.logf("catalog: %s: nothing changed", o.Cluster)
		res.Changes.Updated = nil // nothing that reaches the catalog changed
		return nil, nil
	}
	data, err := s.stateFile(src, next, rendered, ociRecords)
	if err != nil {
		return nil, err
	}
	return s.withState(changes, data), nil
}

// pushOCI pushes the OCI catalog of the cluster (Options.OCI; nil, nil
// without one): the files of rendered/<cluster> of the new catalog, which
// are the tip's with changes applied (on the incremental way only the
// touched artifacts were rendered), as one artifact (ocicatalog.BuildFiles)
// annotated with the package repo and commit src, to the destination
// registry with the run's registry client. When the catalog did not change
// (unchanged) and the state records this tag, the artifact is built with
// the recorded source commit, the one the state keeps: the same digest,
// and the push only checks that the tag still points at it (pushing it
// again when it does not). It returns the record for publish/state.yaml.
func (r *run) pushOCI(ctx context.Context, s *scope, changes []catalog.Change, unchanged bool, src gitops.Source, res *Result) (*gitops.OCIRecord, error) {
	o := r.Options
	if o.OCI == "" {
		return nil, nil
	}
	tag, err := r.ociTag()
	if err != nil {
		return nil, err
	}
	dir := render.RenderedDir + "/" + o.Cluster
	tipFiles, err := s.tip.Files(dir, nil)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for p, data := range tipFiles {
		files[strings.TrimPrefix(p, dir+"/")] = data
	}
	for _, c := range changes {
		rel, ok := strings.CutPrefix(c.Path, dir+"/")
		if !ok {
			continue
		}
		if c.Delete {
			delete(files, rel)
		} else {
			files[rel] = c.Data
		}
	}
	meta := ocicatalog.Meta{Source: src.Repo, Revision: src.Commit}
	prev, had := s.state.OCI[o.Cluster]
	img, err := ocicatalog.BuildFiles(files, dir, meta)
	if err == nil && unchanged && had && prev.Ref == tag.String() {
		recorded := ocicatalog.Meta{Source: s.state.Source.Repo, Revision: s.state.Source.Commit}
		if again, err := ocicatalog.BuildFiles(files, dir, recorded); err == nil {
			if d, err := again.Digest(); err == nil && d.String() == prev.Digest {
				img = again
			}
		}
	}
	if err != nil {
		return nil, err
	}
	opts := r.dstOpts
	if opts == nil {
		opts = r.mc.DstOptions()
	}
	pr, err := ocicatalog.PushImage(ctx, img, tag, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w; nothing committed", err)
	}
	res.OCI = &pr
	if pr.Pushed {
		o.logf("oci: pushed %s/%s to %s@%s", render.RenderedDir, o.Cluster, pr.Ref, pr.Digest)
	} else {
		o.logf("oci: %s already points at %s, nothing pushed", pr.Ref, pr.Digest)
	}
	if o.Sign != nil {
		desc, err := imageDescriptor(img)
		if err == nil {
			err = signCatalog(ctx, o, tag.Context(), desc, pr.Pushed, opts)
		}
		if err != nil {
			return nil, fmt.Errorf("%w; nothing committed", err)
		}
	}
	return &gitops.OCIRecord{Ref: pr.Ref, Digest: pr.Digest}, nil
}

// ociTag is the tag of Options.OCI (ocicatalog.Tag) parsed with the run's
// naming options (plain HTTP). Errors are *InputError naming --oci and
// publish.yaml.
func (r *run) ociTag() (name.Tag, error) {
	tag, err := ocicatalog.Tag(r.OCI, r.Cluster)
	if err == nil {
		var ref name.Reference
		if ref, err = r.mc.ParseReference(tag.String()); err == nil {
			if t, ok := ref.(name.Tag); ok {
				return t, nil
			}
		}
	}
	return name.Tag{}, inputErr(fmt.Errorf("--oci (or publish.yaml clusters.%s.oci): %w", r.Cluster, err))
}

func sameArtifacts(a, b []model.ArtifactRecord) bool {
	x, _ := (&gitops.State{Artifacts: a}).Marshal()
	y, _ := (&gitops.State{Artifacts: b}).Marshal()
	return string(x) == string(y)
}

// updatedInCatalog is the "updated in place" list from what changed in the
// catalog, not from the source diff: the edited versions (candidates,
// "artifact version") whose artifact changed in the catalog, and every
// other changed artifact that no listing change names, by its name alone.
// An artifact changed in the catalog when its rendered/<cluster>/<artifact>/
// files changed, or, for a target whose rendered files are not one
// directory per artifact (olm: one catalog), when a version's record
// differs between prev and next (bundle digest, images: model.UpdatedInPlace).
// With one directory per artifact, an artifact whose own record (display name, description, registry,
// repository) changed is named even beside a new, relisted or delisted
// version of it: the version's line does not say the artifact changed. A
// source edit that changes no rendered byte is not mentioned.
func updatedInCatalog(ch render.Changes, candidates []string, changes []catalog.Change, cluster string, prev, next []model.ArtifactRecord) []string {
	prefix := render.RenderedDir + "/" + cluster + "/"
	known := map[string]bool{}
	for _, a := range next {
		known[a.Name] = true
	}
	touched := map[string]bool{}
	perArtifact, any := false, false
	for _, c := range changes {
		rest, ok := strings.CutPrefix(c.Path, prefix)
		if !ok {
			continue
		}
		any = true
		if art, _, ok := strings.Cut(rest, "/"); ok && known[art] {
			touched[art], perArtifact = true, true
		}
	}
	if !any {
		return nil
	}
	own := map[string]bool{} // artifacts whose own record changed
	for _, c := range model.UpdatedInPlace(prev, next) {
		switch {
		case perArtifact && len(c.Versions) == 0:
			own[c.Artifact] = true
		case !perArtifact && len(c.Versions) > 0:
			touched[c.Artifact] = true
		}
	}
	named := map[string]bool{}
	for _, list := range [][]string{ch.Listed, ch.Upgraded, ch.Relisted, ch.Delisted} {
		for _, item := range list {
			art := listedArtifact(item)
			// A whole artifact listed, relisted or delisted says it all.
			if whole := !strings.Contains(item, " ") || strings.HasSuffix(item, " (artifact)") || !wasPresent(prev, art); whole || !own[art] {
				named[art] = true
			}
		}
	}
	var out []string
	for _, c := range candidates {
		art, _, _ := strings.Cut(c, " ")
		if touched[art] {
			out = append(out, c)
			named[art] = true
		}
	}
	for _, art := range sortedKeys(touched) {
		if !named[art] {
			out = append(out, art)
		}
	}
	return out
}

// wasPresent reports whether the artifact art is present in arts.
func wasPresent(arts []model.ArtifactRecord, art string) bool {
	for _, a := range arts {
		if a.Name == art {
			return a.Present
		}
	}
	return false
}

// listedArtifact is the artifact of a listing change's item ("artifact",
// "artifact@version" or "artifact version").
func listedArtifact(item string) string {
	if i := strings.IndexAny(item, "@ "); i >= 0 {
		return item[:i]
	}
	return item
}
