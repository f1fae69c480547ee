package target

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
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
func (*alauda) Kustomize() bool  { return true }

func (*alauda) Prepare(context.Context, Env, []*model.Version, *gitops.State) error { return nil }

func (t *alauda) Render(_ context.Context, root string, arts []model.ArtifactRecord, prevKey string) (string, error) {
	return RenderInto(root, t.s.Cluster, t.s.Render, arts, prevKey)
}

func (t *alauda) Preview(root string, arts []model.ArtifactRecord, prevKey string) (string, error) {
	_, err := RenderInto(root, t.s.Cluster, t.s.Render, arts, prevKey)
	return "", err
}

func (t *alauda) RenderFromState(root string, arts []model.ArtifactRecord, state *gitops.State) error {
	_, err := RenderInto(root, t.s.Cluster, t.s.Render, arts, state.Rendered[t.s.Cluster])
	return err
}

// RenderInto writes publish/generated/<cluster> and rendered/<cluster> for arts (the
// merged list, tombstones included) into the catalog working tree at root,
// and returns the render key (render.Key) to record in the state.
//
// When prevKey, the key recorded when rendered/<cluster> was last written,
// equals the current key (same overlays, same configuration), only the
// artifacts whose generated objects changed are rendered again; the other
// files of rendered/<cluster> stay as they are. Otherwise everything is
// rendered. Errors from the overlay, and rendered objects the CRDs reject
// (render.Validate), are *model.InputError.
func RenderInto(root, cluster string, cfg render.Config, arts []model.ArtifactRecord, prevKey string) (string, error) {
	gen, err := render.Generated(cluster, cfg, arts)
	if err != nil {
		return "", model.Input(err)
	}
	key, err := render.Key(root, cluster, cfg)
	if err != nil {
		return "", err
	}
	var only map[string]bool
	if _, statErr := os.Stat(filepath.Join(root, render.RenderedDir, cluster)); prevKey != "" && prevKey == key && statErr == nil {
		if only, err = render.ChangedArtifacts(root, cluster, gen); err != nil {
			return "", err
		}
	}
	if err := render.Write(root, []string{render.GeneratedBase(cluster)}, gen); err != nil {
		return "", err
	}
	if only != nil && len(only) == 0 {
		return key, nil // nothing to render again
	}
	out, err := render.BuildOnly(root, cluster, only)
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
	return key, render.Write(root, dirs, out)
}

// Key implements Incremental: render.Key of the overlays in root.
func (t *alauda) Key(root string) (string, error) {
	return render.Key(root, t.s.Cluster, t.s.Render)
}

// RenderArtifacts implements Incremental: it generates the objects of arts,
// and renders through the overlay only the artifacts whose generated
// objects differ from the tip's; their directories of publish/generated/<cluster>
// and rendered/<cluster> are replaced, and the generated kustomization is
// spliced (render.SpliceGenerated). The result equals what RenderInto
// leaves in a checkout of the whole tip, for the same records.
func (t *alauda) RenderArtifacts(view catalog.View, root string, arts []model.ArtifactRecord) ([]catalog.Change, error) {
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
			changes = append(changes, replaceDir(dir, old, now)...)
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
	// alone (render.BuildOnly), next to the overlays already in root.
	if err := render.Write(root, []string{render.GeneratedBase(cluster)}, regen); err != nil {
		return nil, err
	}
	out, err := render.BuildOnly(root, t.s.Cluster, changed)
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
		changes = append(changes, replaceDir(dir, old, now)...)
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

// replaceDir returns the changes that turn the files old below a directory
// into now: removals of the files gone, writes of the files new or
// changed.
func replaceDir(dir string, old, now map[string][]byte) []catalog.Change {
	var out []catalog.Change
	for p := range old {
		if _, ok := now[p]; !ok {
			out = append(out, catalog.Change{Path: p, Delete: true})
		}
	}
	for p, data := range now {
		if o, ok := old[p]; !ok || !bytes.Equal(o, data) {
			out = append(out, catalog.Change{Path: p, Data: data})
		}
	}
	return out
}

func sortChanges(cs []catalog.Change) []catalog.Change {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Path < cs[j].Path })
	return cs
}
