package target

import (
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
)

// renderFromStateDir is tg.RenderFromState on the catalog checkout at root,
// as `publish render` runs it: read, rendered in memory, written back.
func renderFromStateDir(tg Target, root string, arts []model.ArtifactRecord, state *gitops.State) error {
	base, err := render.ReadDir(root)
	if err != nil {
		return err
	}
	cat := base.Clone()
	if err := tg.RenderFromState(cat, arts, state); err != nil {
		return err
	}
	return render.SyncDir(root, base, cat)
}
