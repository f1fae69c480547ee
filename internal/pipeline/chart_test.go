package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"

	"github.com/operator-publish/publish/internal/testenv"
)

// pushTestChart pushes a chart "web" 1.0.0 (a Deployment whose image
// comes from the values) to ref, as Helm pushes charts to OCI.
func pushTestChart(t *testing.T, ref string) {
	t.Helper()
	files := map[string]string{
		"web/Chart.yaml":                "apiVersion: v2\nname: web\nversion: 1.0.0\ndescription: A web server.\n",
		"web/values.yaml":               "image: registry.example.com/web/nginx:1\n",
		"web/templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: {{ .Values.image }}\n",
	}
	testenv.PushChart(t, ref, testenv.ChartArchive(t, files), nil)
}

// TestChartsLintPlanRun: a package repo with a bundle and a chart. lint
// reads and lints the chart (chart/* findings at its manifest's line);
// plan reads it for the cluster with the cluster's values file and
// plans; run stops at the image the chart renders that no registry has,
// naming the manifest's lines, and commits nothing; and on an olm cluster
// the chart is a chart/target lint error.
func TestChartsLintPlanRun(t *testing.T) {
	f := newFixture(t)
	pushTestChart(t, f.src+"/charts/web:1.0.0")
	manifestYAML := "apiVersion: app.alauda.cn/v1beta1\nkind: PackageManifest\nmetadata:\n  name: web.v1.0.0\nspec:\n  type: chart\n  artifact: oci://" + f.src + "/charts/web:1.0.0\n  version: v1.0.0\n  info:\n    displayName: Web\n  relatedImages:\n  - registry.example.com/web/nginx:1\n"
	p := filepath.Join(f.source, "packages/web/1.0.0/manifest.yaml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(manifestYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(f.source, "values/global"), 0o755)
	os.WriteFile(filepath.Join(f.source, "values/global/web.yaml"), []byte("image: registry.example.com/web/nginx:2-global\n"), 0o644)
	f.commit(t, "add the web chart")

	fs, err := Lint(context.Background(), LintOptions{Source: f.source, Mirror: mirror.Options{PlainHTTP: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range fs {
		if strings.HasPrefix(x.Path, "packages/web/") && x.Severity == lint.Error {
			t.Errorf("lint of a good chart: %s", x)
		}
	}

	values := func(cluster, artifact string) string {
		if cluster == "global" && artifact == "web" {
			return "values/global/web.yaml"
		}
		return ""
	}
	o := PlanOptions{Options: Options{Source: f.source, Cluster: "global", ChartValues: values,
		Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog)}}
	plan, err := PlanRun(context.Background(), o)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if md := plan.Markdown(); !strings.Contains(md, "| `web` | listed | 1.0.0 (added) | 3 (3) |") {
		t.Errorf("the plan does not list the chart with its images (spec.relatedImages, the one the cluster's values render, the chart):\n%s", md)
	}
	if md := plan.Markdown(); !strings.Contains(md, "chartrepo_web.yaml") || strings.Contains(md, "artifact_web.yaml") {
		t.Errorf("the plan's rendered diff does not show the chart as its ChartRepo:\n%s", md)
	}
	var missing []string
	for _, x := range plan.Findings {
		if x.Rule == lint.RuleChartMissingRelated {
			missing = append(missing, x.Message)
		}
	}
	if len(missing) != 1 || !strings.Contains(missing[0], "registry.example.com/web/nginx:2-global") || !strings.Contains(missing[0], "values/global/web.yaml") {
		t.Errorf("plan with the cluster's values: chart/missing-related %q, want the global image", missing)
	}

	os.WriteFile(filepath.Join(f.source, "values/global/web.yaml"), []byte("image: registry.example.com/web/nginx:1\n"), 0o644)
	f.commit(t, "values")
	// The image the chart renders is on no registry: run stops at the
	// mirror, naming the manifest lines, and commits nothing.
	_, _, err = f.runOpts(t, func(o *Options) { o.Cluster = "global"; o.ChartValues = values })
	if err == nil || !strings.Contains(err.Error(), "registry.example.com/web/nginx:1") || !strings.Contains(err.Error(), "packages/web/1.0.0/manifest.yaml:7 (deployed by the chart's rendered templates") {
		t.Fatalf("run of a chart whose image is nowhere: %v", err)
	}
	if cat, err := git.PlainOpen(f.catalog); err != nil {
		t.Fatal(err)
	} else if head, err := cat.Head(); err == nil {
		t.Errorf("a run that stopped committed %s", head.Hash())
	}

	_, _, err = f.runOpts(t, func(o *Options) { o.Cluster = "edge"; o.Target = "olm"; o.ChartValues = values })
	if err == nil || !strings.Contains(err.Error(), "chart/target") || !strings.Contains(err.Error(), "the olm target publishes OLM bundles only") {
		t.Errorf("run of a chart on an olm cluster: %v, want a chart/target lint error", err)
	}
}
