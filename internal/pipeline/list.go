package pipeline

import (
	"context"
	"fmt"
	"slices"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/seed"
)

// List is `publish list`: what the catalog repo o lists on each cluster
// (every state file of its branch tip, publish/state/<cluster>.yaml; a
// catalog of the older single state file is read as the first run would
// upgrade it, in memory), or on clusters only when given. It reads the
// catalog alone: no package repo, no registry. Errors: the catalog cannot
// be opened, a state file does not parse (*InputError naming it), a
// cluster asked for that the catalog has no state of (*InputError).
func List(ctx context.Context, o gitops.Options, clusters []string) (*report.Listing, error) {
	tip, err := catalog.OpenTip(ctx, o)
	if err != nil {
		return nil, err
	}
	defer tip.Close()
	files, err := tip.Files(gitops.StateDir[:len("publish")], nil)
	if err != nil {
		return nil, err
	}
	cat := render.Files(files)
	if _, err := seed.Migrate(cat); err != nil {
		return nil, err
	}
	states := map[string][]model.ArtifactRecord{}
	for p := range cat {
		c, ok := gitops.StateCluster(p)
		if !ok || len(clusters) > 0 && !slices.Contains(clusters, c) {
			continue
		}
		st, err := gitops.ReadState(cat, c)
		if err != nil {
			return nil, inputErr(err)
		}
		states[c] = st.Artifacts
	}
	for _, c := range clusters {
		if _, ok := states[c]; !ok {
			return nil, inputErr(fmt.Errorf("--cluster %s: the catalog %s (branch %s) has no state of that cluster (%s): nothing was published to it", c, o.URL, o.Branch, gitops.StatePath(c)))
		}
	}
	return report.NewListing(tip.Head(), states), nil
}
