package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/report"

	"github.com/operator-publish/publish/internal/testenv"
)

// kvChart is chart web 1.0.0 for Kubernetes >=1.30: a Deployment whose
// image comes from the values, a helm.sh/images annotation (a sidecar),
// and a subchart cache whose artifacthub.io/images annotation names its
// image.
func kvChart(t *testing.T) []byte {
	return chartArchive(t, "web", map[string]string{
		"Chart.yaml":                     "apiVersion: v2\nname: web\nversion: 1.0.0\nkubeVersion: \">=1.30.0-0\"\nannotations:\n  helm.sh/images: |\n    - name: sidecar\n      image: registry.example.com/web/sidecar:1\n",
		"values.yaml":                    "image: registry.example.com/web/nginx:1\n",
		"templates/deployment.yaml":      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: {{ .Values.image }}\n",
		"charts/cache/Chart.yaml":        "apiVersion: v2\nname: cache\nversion: 0.1.0\nannotations:\n  artifacthub.io/images: |\n    - name: redis\n      image: registry.example.com/web/redis:7\n",
		"charts/cache/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cache\n",
	})
}

// TestChartsPlanImageSources: `publish plan` over two clusters of a
// chart shows, in the plan JSON (namedBy) and the Markdown, what named
// each image: the render of a template for the cluster with its values
// file, the helm.sh/images annotation of the chart, the
// artifacthub.io/images annotation of its subchart, spec.relatedImages,
// and spec.artifact for the chart itself. Chart.yaml's kubeVersion
// (>=1.30) excludes west (kubernetesVersion v1.29.0): a chart/kube-version
// error on west only, naming it.
func TestChartsPlanImageSources(t *testing.T) {
	f := newFixture(t)
	testenv.PushChart(t, f.src+"/charts/web:1.0.0", kvChart(t), nil)
	m := "apiVersion: app.alauda.cn/v1beta1\nkind: PackageManifest\nmetadata:\n  name: web.v1.0.0\nspec:\n  type: chart\n  artifact: oci://" + f.src + "/charts/web:1.0.0\n  version: v1.0.0\n  relatedImages:\n  - registry.example.com/web/nginx:2-east\n  - registry.example.com/web/sidecar:1\n"
	p := filepath.Join(f.source, "packages/web/1.0.0/manifest.yaml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.MkdirAll(filepath.Join(f.source, "values/east"), 0o755)
	if err := os.WriteFile(p, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.source, "values/east/web.yaml"), []byte("image: registry.example.com/web/nginx:2-east\n"), 0o644)
	f.commit(t, "add the web chart")

	o := Options{Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog),
		Clusters: []ClusterOptions{{Name: "east"}, {Name: "west"}},
		ChartValues: func(cluster, art string) string {
			if cluster == "east" && art == "web" {
				return "values/east/web.yaml"
			}
			return ""
		},
		KubeVersion: func(cluster string) string { return map[string]string{"east": "v1.31.0", "west": "v1.29.0"}[cluster] },
	}
	plans, err := PlanClusters(context.Background(), PlanOptions{Options: o})
	if err != nil || len(plans) != 2 {
		t.Fatalf("plan: %v", err)
	}
	east, west := plans[0], plans[1]
	named := map[string]string{}
	for _, a := range east.Artifacts {
		for _, v := range a.Versions {
			for _, i := range v.Images {
				data, _ := json.Marshal(i)
				if a.Name != "web" {
					if strings.Contains(string(data), "namedBy") {
						t.Errorf("a bundle's image has namedBy: %s", data)
					}
					continue
				}
				data, _ = json.Marshal(i.NamedBy)
				named[i.Source] = string(data)
			}
		}
	}
	for img, want := range map[string]string{
		"registry.example.com/web/nginx:2-east": `[{"source":"render","file":"web/templates/deployment.yaml","cluster":"east","values":"values/east/web.yaml"},{"source":"relatedImages"}]`,
		"registry.example.com/web/sidecar:1":    `[{"source":"annotation","annotation":"helm.sh/images","chart":"web"},{"source":"relatedImages"}]`,
		"registry.example.com/web/redis:7":      `[{"source":"annotation","annotation":"artifacthub.io/images","chart":"web/charts/cache"}]`,
		f.src + "/charts/web:1.0.0":             `[{"source":"artifact"}]`,
	} {
		if named[img] != want {
			t.Errorf("east: %s named by %s, want %s", img, named[img], want)
		}
	}
	if len(named) != 4 {
		t.Errorf("east: images %v", named)
	}
	md := east.Markdown()
	for _, w := range []string{
		"### Chart images: 4",
		"| `web` | 1.0.0 | `registry.example.com/web/nginx:2-east` | render of web/templates/deployment.yaml for cluster east (values values/east/web.yaml); spec.relatedImages |",
		"| `web` | 1.0.0 | `registry.example.com/web/redis:7` | artifacthub.io/images of chart web/charts/cache |",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("the Markdown plan has no %q:\n%s", w, md)
		}
	}
	kube := func(p *report.Plan) []string {
		var out []string
		for _, x := range p.Findings {
			if x.Rule == lint.RuleChartKubeVersion {
				out = append(out, x.String())
			}
		}
		return out
	}
	if got := kube(east); len(got) != 0 {
		t.Errorf("east (v1.31.0): %q", got)
	}
	if got := kube(west); len(got) != 1 || !strings.Contains(got[0], "packages/web/1.0.0/manifest.yaml:7") || !strings.Contains(got[0], "excludes Kubernetes v1.29.0 of cluster west") {
		t.Errorf("west (v1.29.0): chart/kube-version %q, want one naming the cluster", got)
	}
	for _, a := range west.Artifacts {
		for _, v := range a.Versions {
			for _, i := range v.Images {
				if i.Source == "registry.example.com/web/nginx:1" && (len(i.NamedBy) != 1 || i.NamedBy[0].Cluster != "west" || i.NamedBy[0].Values != "") {
					t.Errorf("west: nginx:1 named by %+v, want the render for west with the chart's own values", i.NamedBy)
				}
			}
		}
	}
}
