package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/operator-publish/publish/internal/chartmuseum"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
)

// uploadCharts is the ChartMuseum way of a cluster whose charts go to an
// existing ChartRepo (render.Config.ChartRepo, publish.yaml
// clusters.<cluster>.chartRepo): each chart version read in this run
// (vs) and listed in next is uploaded, its archive byte for byte, to the
// ChartMuseum repository the ChartRepo serves (a version already there
// with the same archive is left alone), and each chart version listed in
// previous and delisted in next is deleted from it. It runs after the
// mirror and before the commit, over the registry client's transport
// (CA, proxy). A version rewritten (rewriteCharts) is uploaded as its new
// version instead, and a delisted version's rewritten versions
// (<version>+mirror.<id>) are deleted with it. Errors name the ChartRepo
// and the chart; none is an input error, as a registry that fails is none.
func uploadCharts(ctx context.Context, mc *mirror.Client, ref render.ChartRepoRef, auth chartmuseum.Auth, previous, next []model.ArtifactRecord, vs []*model.Version, rewritten map[model.Key]*kind.RewrittenChart, logf func(string, ...any)) error {
	repo := chartmuseum.Repo{URL: ref.URL, Auth: auth}
	if mc != nil {
		repo.Client = &http.Client{Transport: mc.Registry().Transport()}
	}
	listed := presentVersions(next)
	var errs []error
	for _, v := range vs {
		k := v.Key()
		archive := kind.ChartArchive(v)
		if v.Kind() != manifest.TypeChart || archive == nil || !listed[k] {
			continue
		}
		version := k.Version
		if rc := rewritten[k]; rc != nil {
			version, archive = rc.Version, rc.Archive
		}
		res, err := repo.Upload(ctx, kind.ChartOf(v).Name, version, archive)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: ChartRepo %s: %w", v.Where(), ref.Name, err))
		case res.Skipped:
			logf("charts: %s %s is in ChartRepo %s already", k.Artifact, version, ref.Name)
		default:
			logf("charts: uploaded %s %s to ChartRepo %s", k.Artifact, version, ref.Name)
		}
	}
	for _, a := range previous {
		if a.Type != manifest.TypeChart || !a.Present {
			continue
		}
		chart := path.Base(a.Repository) // the chart's name: its repository at the destination ends with it
		for _, pv := range a.Versions {
			if !pv.Present || listed[model.Key{Artifact: a.Name, Version: pv.Version}] {
				continue
			}
			versions, err := repo.Versions(ctx, chart)
			if err != nil {
				errs = append(errs, fmt.Errorf("ChartRepo %s: %w", ref.Name, err))
				continue
			}
			for _, ver := range append([]string{pv.Version}, rewrittenVersions(versions, pv.Version)...) {
				if err := repo.Delete(ctx, chart, ver); err != nil {
					errs = append(errs, fmt.Errorf("ChartRepo %s: %w", ref.Name, err))
				} else {
					logf("charts: deleted %s %s from ChartRepo %s", a.Name, ver, ref.Name)
				}
			}
		}
	}
	err := errors.Join(errs...)
	if errors.Is(err, chartmuseum.ErrUnauthorized) {
		err = fmt.Errorf("%w (give --chart-repo-username and --chart-repo-password, or --chart-repo-token: PUBLISH_CHART_REPO_USERNAME, PUBLISH_CHART_REPO_PASSWORD, PUBLISH_CHART_REPO_TOKEN)", err)
	}
	return err
}

// presentVersions are the versions arts list (artifact and version
// present).
func presentVersions(arts []model.ArtifactRecord) map[model.Key]bool {
	out := map[model.Key]bool{}
	for _, a := range arts {
		for _, v := range a.Versions {
			if a.Present && v.Present {
				out[model.Key{Artifact: a.Name, Version: v.Version}] = true
			}
		}
	}
	return out
}

// rewrittenVersions are the versions among versions that rewriteCharts
// made of version: version+mirror.<id>, or version.mirror.<id> when
// version has build metadata already.
func rewrittenVersions(versions []string, version string) []string {
	var out []string
	for _, v := range versions {
		if strings.HasPrefix(v, version+"+"+kind.MirrorBuildPrefix) || strings.Contains(version, "+") && strings.HasPrefix(v, version+"."+kind.MirrorBuildPrefix) {
			out = append(out, v)
		}
	}
	return out
}
