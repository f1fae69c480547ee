package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"

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
// (CA, proxy). Errors name the ChartRepo and the chart; none is an input
// error, as a registry that fails is none.
func uploadCharts(ctx context.Context, mc *mirror.Client, ref render.ChartRepoRef, auth chartmuseum.Auth, previous, next []model.ArtifactRecord, vs []*model.Version, logf func(string, ...any)) error {
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
		res, err := repo.Upload(ctx, kind.ChartOf(v).Name, k.Version, archive)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: ChartRepo %s: %w", v.Where(), ref.Name, err))
		case res.Skipped:
			logf("charts: %s %s is in ChartRepo %s already", k.Artifact, k.Version, ref.Name)
		default:
			logf("charts: uploaded %s %s to ChartRepo %s", k.Artifact, k.Version, ref.Name)
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
			if err := repo.Delete(ctx, chart, pv.Version); err != nil {
				errs = append(errs, fmt.Errorf("ChartRepo %s: %w", ref.Name, err))
			} else {
				logf("charts: deleted %s %s from ChartRepo %s", a.Name, pv.Version, ref.Name)
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
