package e2e

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
)

// chartRepoObjects are the ChartRepo objects the alauda target renders
// for a cluster whose catalog lists a chart (render.Generated: type Git,
// its source the catalog repo's chart directory of the cluster), for the
// API server's dry run against ACP's ChartRepo CRD.
func chartRepoObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	arts := []model.ArtifactRecord{{
		Name: "web", Type: "chart", Present: true, Registry: "registry.example.com", Repository: "mirror/charts/web",
		Versions: []model.VersionRecord{{Version: "1.0.0", Tag: "1.0.0", Present: true}},
	}}
	cfg := render.Config{ChartGitURL: "https://git.example.com/platform/catalog.git", ChartGitPath: "catalogs/prod"}
	files, err := render.Generated("global", cfg, arts)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for p, data := range files {
		var head struct{ Kind string }
		if err := yaml.Unmarshal(data, &head); err == nil && head.Kind == render.ChartRepoKind {
			out = append(out, objects(t, p, data)...)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d ChartRepo objects rendered for one chart", len(out))
	}
	return out
}
