package pipeline

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/getter"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestChartsRunChartMuseum: a cluster whose charts go to an existing
// ChartRepo (clusters.<cluster>.chartRepo: public-charts) gets them
// uploaded to a real ChartMuseum through its API, after the mirror and
// before the commit; the catalog holds neither chart sources nor a
// ChartRepo for them. As a user would, the Helm SDK's repository client
// reads the repository's index.yaml and pulls each chart: the archive
// published. A second run uploads nothing, and delisting a version deletes
// it from the repository.
func TestChartsRunChartMuseum(t *testing.T) {
	cm := testenv.ChartMuseum(t)
	e := newChartEnv(t)
	e.pushWeb(t, "1.0.0")
	e.writeChart(t, "cron", "0.1.0", "artifact: "+e.repoURL+"\n  chart: cron", e.reg.Ref("src/cron/job:1"))
	e.writeValues(t)
	e.commit(t, "two charts")
	repoURL := cm.URL + "/public-charts"
	opts := func() Options {
		o := e.options()
		o.Render.ChartRepo = render.ChartRepoRef{Name: "public-charts", URL: repoURL}
		return o
	}
	if _, err := Run(context.Background(), opts()); err != nil {
		t.Fatalf("run: %v", err)
	}
	if e.catalogFile(t, "charts/global/web/1.0.0/Chart.yaml") != "" || e.catalogFile(t, "rendered/global/web/chartrepo_web.yaml") != "" {
		t.Error("the ChartMuseum way wrote chart sources or a ChartRepo to the catalog")
	}
	idx := helmIndex(t, repoURL)
	for _, c := range []struct{ name, version string }{{"web", "1.0.0"}, {"cron", "0.1.0"}} {
		cv, err := idx.Get(c.name, c.version)
		if err != nil {
			t.Fatalf("index.yaml: %v", err)
		}
		u, err := repo.ResolveReferenceURL(repoURL, cv.URLs[0])
		if err != nil {
			t.Fatal(err)
		}
		g, _ := getter.NewHTTPGetter()
		data, err := g.Get(u)
		if err != nil {
			t.Fatalf("helm pulls %s: %v", u, err)
		}
		if !bytes.Equal(data.Bytes(), e.archives[c.name+" "+c.version]) {
			t.Errorf("the %s %s the repository serves is not the archive published", c.name, c.version)
		}
	}

	if res, err := Run(context.Background(), opts()); err != nil || res.Commit != "" {
		t.Fatalf("second run: %+v, %v", res, err)
	}

	e.pushWeb(t, "1.1.0")
	e.removeVersion(t, "web", "1.0.0")
	e.commit(t, "web 1.1.0 instead of 1.0.0")
	if _, err := Run(context.Background(), opts()); err != nil {
		t.Fatalf("upgrade and delist: %v", err)
	}
	idx = helmIndex(t, repoURL)
	if _, err := idx.Get("web", "1.0.0"); err == nil {
		t.Error("web 1.0.0, delisted, is still in the repository")
	}
	if _, err := idx.Get("web", "1.1.0"); err != nil {
		t.Errorf("web 1.1.0: %v", err)
	}
}

// helmIndex reads the repository's index.yaml with the Helm SDK's
// repository client, as `helm repo add` and `helm repo update` do.
func helmIndex(t *testing.T, url string) *repo.IndexFile {
	t.Helper()
	r, err := repo.NewChartRepository(&repo.Entry{Name: "public-charts", URL: url}, getter.Providers{{Schemes: []string{"http", "https"}, New: getter.NewHTTPGetter}})
	if err != nil {
		t.Fatal(err)
	}
	r.CachePath = t.TempDir()
	p, err := r.DownloadIndexFile()
	if err != nil {
		t.Fatalf("helm reads %s/index.yaml: %v", url, err)
	}
	idx, err := repo.LoadIndexFile(p)
	if err != nil || !strings.HasPrefix(filepath.Base(p), "public-charts") {
		t.Fatalf("index %s: %v", p, err)
	}
	return idx
}
