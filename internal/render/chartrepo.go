package render

import (
	"path"

	"github.com/operator-publish/publish/internal/model"
)

// The ChartRepo of Alauda's Captain (chartrepos.app.alauda.io; ACP's CRD,
// docs/shared/crds/app.alauda.io_chartrepos.yaml in alauda/acp-docs, is
// built into the binary: internal/crdcheck/crds) that serves a chart's
// sources from the catalog repo (docs/charts.md).
const (
	ChartRepoAPIVersion = "app.alauda.io/v1beta1"
	ChartRepoKind       = "ChartRepo"
	// ChartsDir is the catalog's directory of chart sources:
	// charts/<cluster>/<chart>/<version>/ (ChartSourceDir).
	ChartsDir = "charts"
	// captainChartMuseum is where Captain serves the repository it builds
	// of a ChartRepo of type Git: its controller writes
	// "http://captain-chartmuseum:8080/<name>" into spec.url when it is
	// empty (controllers/chartrepo_controller.go, generateLocalRepoURL).
	// The rendered object says the same, so that Argo CD or Flux and the
	// controller do not fight over the field.
	captainChartMuseum = "http://captain-chartmuseum:8080/"
)

// ChartDir is the directory of the chart sources of chart on cluster,
// relative to the catalog root: charts/<cluster>/<chart>. A ChartRepo of
// type Git points at it: Captain packages every subdirectory of the path
// that holds a Chart.yaml (pkg/helm/package.go, createCharts), one per
// version.
func ChartDir(cluster, chart string) string { return path.Join(ChartsDir, cluster, chart) }

// ChartSourceDir is the directory of one version of chart on cluster:
// charts/<cluster>/<chart>/<version> (version without v), the chart's
// files as its archive holds them.
func ChartSourceDir(cluster, chart, version string) string {
	return path.Join(ChartDir(cluster, chart), version)
}

// chartRepo is the ChartRepo object of the chart record a on cluster
// (type Git, named after the chart, in cfg's namespace, its source the
// catalog repo cfg.ChartGitURL at ChartDir below cfg.ChartGitPath), nil
// when no version of a is listed: a delisted chart has no repository, and
// its releases already installed keep running.
func chartRepo(cfg Config, cluster string, a model.ArtifactRecord) Object {
	listed := false
	for _, v := range a.Versions {
		listed = listed || v.Present
	}
	if !a.Present || !listed {
		return nil
	}
	return Object{
		"apiVersion": ChartRepoAPIVersion,
		"kind":       ChartRepoKind,
		"metadata": Object{
			"name":      a.Name,
			"namespace": cfg.Namespace,
			"labels":    Object{LabelLibrary: cfg.Library},
		},
		"spec": Object{
			"type": "Git",
			"url":  captainChartMuseum + a.Name,
			"source": Object{
				"url":  cfg.ChartGitURL,
				"path": path.Join(cfg.ChartGitPath, ChartDir(cluster, a.Name)),
			},
		},
	}
}
