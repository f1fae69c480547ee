package target

import (
	"context"
	"os"
	"path/filepath"
	"sort"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
)

// alauda renders Artifact and ArtifactVersion objects (publish/generated)
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

// RenderInto writes publish/generated and rendered/<cluster> for arts (the
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
	gen, err := render.Generated(cfg, arts)
	if err != nil {
		return "", model.Input(err)
	}
	key, err := render.Key(root, cluster, cfg)
	if err != nil {
		return "", err
	}
	var only map[string]bool
	if _, statErr := os.Stat(filepath.Join(root, render.RenderedDir, cluster)); prevKey != "" && prevKey == key && statErr == nil {
		if only, err = render.ChangedArtifacts(root, gen); err != nil {
			return "", err
		}
	}
	if err := render.Write(root, []string{render.GeneratedDir}, gen); err != nil {
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
