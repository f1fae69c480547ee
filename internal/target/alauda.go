package target

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
)

// alauda renders Artifact and ArtifactVersion objects (publish/generated/<cluster>)
// through the cluster's kustomize overlay into rendered/<cluster>.
type alauda struct{ s Settings }

func newAlauda(s Settings) Target { return &alauda{s: s} }

func (*alauda) Check() error     { return nil }
func (*alauda) Images() []string { return nil }

func (*alauda) Prepare(context.Context, Env, []*model.Version, *gitops.State) error { return nil }

func (t *alauda) Render(_ context.Context, cat render.Files, arts []model.ArtifactRecord, prevKey string) (string, error) {
	return RenderInto(cat, t.s.Cluster, t.s.Render, arts, prevKey)
}

func (t *alauda) Preview(cat render.Files, arts []model.ArtifactRecord, prevKey string) (string, error) {
	_, err := RenderInto(cat, t.s.Cluster, t.s.Render, arts, prevKey)
	return "", err
}

func (t *alauda) RenderFromState(cat render.Files, arts []model.ArtifactRecord, state *gitops.State) error {
	_, err := RenderInto(cat, t.s.Cluster, t.s.Render, arts, state.Rendered[t.s.Cluster])
	return err
}

// RenderInto writes publish/generated/<cluster> and rendered/<cluster> for
// arts (the merged list, tombstones included) into the catalog cat, in
// memory, and returns the render key (render.Key) to record in the state.
//
// When prevKey, the key recorded when rendered/<cluster> was last written,
// equals the current key (same overlays, same configuration), only the
// artifacts whose generated objects changed are rendered again; the other
// files of rendered/<cluster> stay as they are. Otherwise everything is
// rendered. Errors from the overlay, and rendered objects the CRDs reject
// (render.Validate), are *model.InputError.
func RenderInto(cat render.Files, cluster string, cfg render.Config, arts []model.ArtifactRecord, prevKey string) (string, error) {
	gen, err := render.Generated(cluster, cfg, arts)
	if err != nil {
		return "", model.Input(err)
	}
	key := render.Key(cat, cluster, cfg)
	var only map[string]bool
	if prevKey != "" && prevKey == key && cat.HasDir(render.RenderedDir+"/"+cluster) {
		only = render.ChangedArtifacts(cat, cluster, gen)
	}
	cat.Replace([]string{render.GeneratedBase(cluster)}, gen)
	if only != nil && len(only) == 0 {
		return key, nil // nothing to render again
	}
	out, err := render.BuildOnly(cat, cluster, only)
	if err != nil {
		return "", model.Input(err)
	}
	if err := render.Validate(cluster, out); err != nil {
		return "", model.Input(err)
	}
	dirs := []string{render.RenderedDir + "/" + cluster}
	if only != nil {
		dirs = dirs[:0]
		for art := range only {
			dirs = append(dirs, render.RenderedDir+"/"+cluster+"/"+art)
		}
		sort.Strings(dirs)
	}
	cat.Replace(dirs, out)
	return key, nil
}

// Key implements Incremental: render.Key of the overlays in cat.
func (t *alauda) Key(cat render.Files) string {
	return render.Key(cat, t.s.Cluster, t.s.Render)
}

// RenderArtifacts implements Incremental: it generates the objects of arts,
// and renders through the overlay only the artifacts whose generated
// objects differ from the tip's; their directories of publish/generated/<cluster>
// and rendered/<cluster> are replaced, and the generated kustomization is
// spliced (render.SpliceGenerated). The result equals what RenderInto
// leaves in a checkout of the whole tip, for the same records.
func (t *alauda) RenderArtifacts(view catalog.View, overlays render.Files, arts []model.ArtifactRecord) ([]catalog.Change, error) {
	cluster := t.s.Cluster
	gen, err := render.Generated(cluster, t.s.Render, arts)
	if err != nil {
		return nil, model.Input(err)
	}
	var changes []catalog.Change
	changed := map[string]bool{}
	regen := render.Files{}
	for _, a := range arts {
		dir := render.GeneratedBase(cluster) + "/" + a.Name
		old, err := view.Files(dir, nil)
		if err != nil {
			return nil, err
		}
		now := render.Files{}
		for p, data := range gen {
			if strings.HasPrefix(p, dir+"/") {
				now[p] = data
			}
		}
		if !sameFiles(old, now) {
			changed[a.Name] = true
			changes = append(changes, now.Changes(old)...)
			for p, data := range now {
				regen[p] = data
			}
		}
	}
	kp := render.GeneratedKustomization(cluster)
	oldK, ok, err := view.ReadFile(kp)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("the catalog has no %s: render it whole", kp)
	}
	k, err := render.SpliceGenerated(cluster, oldK, gen)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(k, oldK) {
		changes = append(changes, catalog.Change{Path: kp, Data: k})
	}
	if len(changed) == 0 {
		return sortChanges(changes), nil
	}
	// The overlay builds the changed artifacts from their generated files
	// alone (render.BuildOnly), beside the overlays.
	cat := overlays.Clone()
	cat.Replace([]string{render.GeneratedBase(cluster)}, regen)
	out, err := render.BuildOnly(cat, t.s.Cluster, changed)
	if err != nil {
		return nil, model.Input(err)
	}
	if err := render.Validate(t.s.Cluster, out); err != nil {
		return nil, model.Input(err)
	}
	clusterDir := render.RenderedDir + "/" + t.s.Cluster
	for art := range changed {
		dir := clusterDir + "/" + art
		old, err := view.Files(dir, nil)
		if err != nil {
			return nil, err
		}
		now := render.Files{}
		for p, data := range out {
			if strings.HasPrefix(p, dir+"/") {
				now[p] = data
			}
		}
		changes = append(changes, now.Changes(old)...)
	}
	// What the overlay adds by itself comes out again; it changes only
	// with the overlay, whose key is unchanged, but is compared anyway.
	for p, data := range out {
		art, _, _ := strings.Cut(strings.TrimPrefix(p, clusterDir+"/"), "/")
		if changed[art] {
			continue
		}
		old, ok, err := view.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if !ok || !bytes.Equal(old, data) {
			changes = append(changes, catalog.Change{Path: p, Data: data})
		}
	}
	return sortChanges(changes), nil
}

func sameFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for p, x := range a {
		if y, ok := b[p]; !ok || !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}

func sortChanges(cs []catalog.Change) []catalog.Change {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Path < cs[j].Path })
	return cs
}

// RenderIntoDir is RenderInto on the catalog checkout at root: the catalog
// read into memory (render.ReadDir), rendered there, and what changed
// written back (render.SyncDir); nothing is written when the render fails.
func RenderIntoDir(root, cluster string, cfg render.Config, arts []model.ArtifactRecord, prevKey string) (string, error) {
	base, err := render.ReadDir(root)
	if err != nil {
		return "", err
	}
	cat := base.Clone()
	key, err := RenderInto(cat, cluster, cfg, arts, prevKey)
	if err != nil {
		return "", err
	}
	return key, render.SyncDir(root, base, cat, render.RenderedDir+"/"+cluster, render.GeneratedBase(cluster))
}
