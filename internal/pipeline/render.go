package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5"

	"github.com/operator-publish/publish/internal/checkout"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/seed"
)

// RenderOptions configures `publish render`: the render stage alone, into a
// local checkout of the catalog repo, with no registry access and no commit.
type RenderOptions struct {
	Source      string
	PackagesDir string
	CatalogDir  string // local catalog working tree, written in place
	Cluster     string
	Render      render.Config
	// DstRegistry maps bundle repositories for artifacts that are not yet in
	// publish/state.yaml; known artifacts keep their recorded registry.
	DstRegistry string
	PlainHTTP   bool
	// Target and TargetSettings as in Options: the olm target renders the
	// CatalogSource from the catalog image recorded in publish/state.yaml.
	Target         string
	TargetSettings any
	// Include and Exclude select the cluster's artifacts
	// (ClusterOptions).
	Include, Exclude []string
}

// Render writes publish/generated and rendered/<cluster> into CatalogDir
// from the source tree and CatalogDir's publish/state.yaml. Digests recorded
// in the state are kept; publish/state.yaml itself is not rewritten (only
// `publish run`, which mirrors, records what was published).
func Render(ctx context.Context, o RenderOptions) (render.Changes, error) {
	ro := Options{Source: o.Source, PackagesDir: o.PackagesDir, Cluster: o.Cluster}
	ro.defaults()
	ro.Target, ro.TargetSettings, ro.Render = o.Target, o.TargetSettings, o.Render
	ro.Catalog.URL = originURL(o.CatalogDir) // a chart's ChartRepo names it (render.Config.ChartGitURL)
	tgt, err := ro.newTarget()
	if err != nil {
		return render.Changes{}, err
	}
	if st, err := os.Stat(o.CatalogDir); err != nil || !st.IsDir() {
		return render.Changes{}, inputErr(fmt.Errorf("--catalog-dir %q: not a directory (a local checkout of the catalog repo)", o.CatalogDir))
	}
	if isBareRepo(o.CatalogDir) {
		return render.Changes{}, inputErr(fmt.Errorf("--catalog-dir %q is a bare Git repository: render writes files, so clone it first (git clone %s catalog) and pass the clone", o.CatalogDir, o.CatalogDir))
	}
	// Nothing is written through a committed symbolic link (the writes
	// themselves go through checkout as well).
	if err := checkout.NoLinks(o.CatalogDir, render.RenderedDir, "publish", render.ClustersDir+"/"+ro.Cluster); err != nil {
		return render.Changes{}, inputErr(fmt.Errorf("--catalog-dir: %w", err))
	}
	ms, err := Scan(ro.Source, ro.PackagesDir)
	if err != nil {
		return render.Changes{}, err
	}
	// The catalog is read into memory, rendered there, and what changed
	// is written back (render.SyncDir).
	base, err := render.ReadDir(o.CatalogDir)
	if err != nil {
		return render.Changes{}, err
	}
	cat := base.Clone()
	// A catalog of the layout before state per cluster is upgraded in
	// place, as the first run would (commit it with the render).
	if _, err := seed.Migrate(cat); err != nil {
		return render.Changes{}, err
	}
	state, err := gitops.ReadState(cat, ro.Cluster)
	if err != nil {
		return render.Changes{}, inputErr(err)
	}
	mc, err := mirror.New(mirror.Options{DstRegistry: o.DstRegistry, PlainHTTP: o.PlainHTTP})
	if err != nil {
		return render.Changes{}, inputErr(err)
	}
	prev := map[string]model.ArtifactRecord{}
	for _, a := range state.Artifacts {
		prev[a.Name] = a
	}
	if mc.DstHost() == "" {
		for _, m := range ms {
			if _, ok := prev[m.Artifact]; !ok && (ClusterOptions{Include: o.Include, Exclude: o.Exclude}).selects(m.Artifact) {
				return render.Changes{}, inputErr(fmt.Errorf("%s: artifact %s is not in %s yet (cluster %s was not published to it): pass --dst-registry so its repository can be mapped", m.Path, m.Artifact, gitops.StatePath(ro.Cluster), ro.Cluster))
			}
		}
	}
	// Without --dst-registry every artifact is known: registry and
	// repository come from the state (carryOver).
	sel := ClusterOptions{Name: ro.Cluster, Include: o.Include, Exclude: o.Exclude}
	if err := sel.checkPatterns(); err != nil {
		return render.Changes{}, err
	}
	var vs []*model.Version
	for _, v := range model.NewVersions(ms) {
		if sel.selects(v.Manifest.Artifact) {
			vs = append(vs, v)
		}
	}
	// Nothing is read, linted or verified (render reaches no registry):
	// the records only, with the digests the state keeps.
	p, err := prepare(ctx, prepareIn{Versions: vs, Previous: state.Artifacts, Records: DestinationOf(mc)})
	if err != nil {
		return render.Changes{}, err
	}
	next := p.next
	if len(state.Artifacts) == 0 {
		if err := seed.Template(cat); err != nil {
			return render.Changes{}, err
		}
	}
	// The target reads its own part of the recorded render key.
	ts := *state
	if k, ok := ts.Rendered[ro.Cluster]; ok {
		ts.Rendered = map[string]string{ro.Cluster: targetKey(k)}
	}
	if err := tgt.RenderFromState(cat, next, &ts); err != nil {
		return p.changes, err
	}
	return p.changes, render.SyncDir(o.CatalogDir, base, cat, render.RenderedDir+"/"+ro.Cluster, render.GeneratedBase(ro.Cluster))
}

// isBareRepo reports whether dir looks like a bare Git repository (HEAD,
// objects/ and refs/ at its top, no work tree).
func isBareRepo(dir string) bool {
	for _, p := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	_, err := os.Stat(filepath.Join(dir, ".git"))
	return err != nil
}

// originURL is the URL of the remote origin of the Git checkout at dir,
// "" when it has none or is no checkout.
func originURL(dir string) string {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return ""
	}
	r, err := repo.Remote("origin")
	if err != nil || len(r.Config().URLs) == 0 {
		return ""
	}
	return r.Config().URLs[0]
}
