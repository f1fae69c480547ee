package render

import (
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/model"
)

// TestChartRepoObjects: a chart record is a ChartRepo of type Git (not an
// Artifact) naming the catalog repo and the chart's directory of the
// cluster below the catalog's path, valid against ACP's CRD; none when no
// version is listed or the cluster's charts go to an existing ChartRepo;
// without the catalog's URL, an error naming the setting.
func TestChartRepoObjects(t *testing.T) {
	chart := model.ArtifactRecord{Name: "web", Type: "chart", Present: true, Registry: "reg.example.com", Repository: "charts/web",
		Versions: []model.VersionRecord{{Version: "1.0.0", Tag: "1.0.0", Present: true}}}
	bundle := model.ArtifactRecord{Name: "tiny", Present: true, Registry: "reg.example.com", Repository: "tiny/bundle",
		Versions: []model.VersionRecord{{Version: "1.0.0", Tag: "v1.0.0", Present: true}}}
	cfg := Config{ChartGitURL: "https://git.example.com/catalog.git", ChartGitPath: "catalogs/prod"}
	files, err := Generated("east", cfg, []model.ArtifactRecord{bundle, chart})
	if err != nil {
		t.Fatal(err)
	}
	repo := string(files[GeneratedBase("east")+"/web/chartrepo_web.yaml"])
	for _, want := range []string{"apiVersion: app.alauda.io/v1beta1", "kind: ChartRepo", "type: Git", "url: http://captain-chartmuseum:8080/web", "url: https://git.example.com/catalog.git", "path: catalogs/prod/charts/east/web", "namespace: cpaas-system"} {
		if !strings.Contains(repo, want) {
			t.Errorf("the ChartRepo lacks %q:\n%s", want, repo)
		}
	}
	if _, ok := files[GeneratedBase("east")+"/web/artifact_web.yaml"]; ok {
		t.Error("a chart rendered as an Artifact")
	}
	if _, ok := files[GeneratedBase("east")+"/tiny/artifact_tiny.yaml"]; !ok {
		t.Error("the bundle's Artifact is missing")
	}
	if err := Validate("east", Files{"rendered/east/web/chartrepo_web.yaml": []byte(repo)}); err != nil {
		t.Errorf("the ChartRepo against ACP's CRD: %v", err)
	}

	delisted := chart
	delisted.Versions = []model.VersionRecord{{Version: "1.0.0", Tag: "1.0.0"}}
	museum := cfg
	museum.ChartRepo = ChartRepoRef{Name: "public-charts", URL: "http://cm.example.com/public-charts"}
	for name, c := range map[string]struct {
		cfg  Config
		arts []model.ArtifactRecord
	}{"delisted": {cfg, []model.ArtifactRecord{delisted}}, "chartmuseum": {museum, []model.ArtifactRecord{chart}}} {
		files, err := Generated("east", c.cfg, c.arts)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := files[GeneratedBase("east")+"/web/chartrepo_web.yaml"]; ok {
			t.Errorf("%s: a ChartRepo is rendered", name)
		}
	}
	if _, err := Generated("east", Config{}, []model.ArtifactRecord{chart}); err == nil || !strings.Contains(err.Error(), "clusters.east.chartGitURL") {
		t.Errorf("no catalog URL: %v", err)
	}
}
