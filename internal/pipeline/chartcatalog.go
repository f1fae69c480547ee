package pipeline

import (
	"bytes"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
)

// chartSources returns the changes that make the catalog's chart sources
// of the cluster (render.ChartDir: charts/<cluster>/<chart>/<version>/,
// which the chart's ChartRepo of type Git serves) follow next, the
// cluster's merged records: each version of a chart read in this run
// (vs: its archive, kind.ChartArchive) and listed is written as the
// archive's files, byte for byte (kind.ChartFiles), a file the tip has
// there and the archive does not removed; each version delisted, and
// every version of a delisted chart, has its directory removed. A listed
// version not read in this run keeps what the tip has. Nothing else of
// charts/ is touched. Errors: the tip that cannot be read, an archive
// that does not unpack (an input error naming its manifest).
func chartSources(tip *catalog.Tip, cluster string, next []model.ArtifactRecord, vs []*model.Version, rewritten map[model.Key]*kind.RewrittenChart) ([]catalog.Change, error) {
	archives := map[model.Key]*model.Version{}
	for _, v := range vs {
		if v.Kind() == manifest.TypeChart && kind.ChartArchive(v) != nil {
			archives[v.Key()] = v
		}
	}
	var out []catalog.Change
	for _, a := range next {
		if a.Type != manifest.TypeChart {
			continue
		}
		for _, rv := range a.Versions {
			dir := render.ChartSourceDir(cluster, a.Name, rv.Version)
			old, err := tip.Files(dir, nil)
			if err != nil {
				return nil, err
			}
			if !a.Present || !rv.Present {
				if len(old) > 0 {
					out = append(out, catalog.Change{Path: dir, Delete: true})
				}
				continue
			}
			v := archives[model.Key{Artifact: a.Name, Version: rv.Version}]
			if v == nil {
				continue // not read in this run: the tip's files stay
			}
			archive := kind.ChartArchive(v)
			if rc := rewritten[v.Key()]; rc != nil {
				archive = rc.Archive // the version the cluster gets: its values name the destination
			}
			files, err := kind.ChartFiles(v.Ref(), archive)
			if err != nil {
				return nil, inputErr(err)
			}
			out = append(out, sourceChanges(dir, old, files)...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// sourceChanges are the changes that make dir (whose files the tip has
// as old, keyed by their path from the catalog root) hold exactly files
// (keyed by their path below dir).
func sourceChanges(dir string, old map[string][]byte, files map[string][]byte) []catalog.Change {
	var out []catalog.Change
	for p := range old {
		if _, ok := files[strings.TrimPrefix(p, dir+"/")]; !ok {
			out = append(out, catalog.Change{Path: p, Delete: true})
		}
	}
	for rel, data := range files {
		p := dir + "/" + rel
		if o, ok := old[p]; !ok || !bytes.Equal(o, data) {
			out = append(out, catalog.Change{Path: p, Data: data})
		}
	}
	return out
}
