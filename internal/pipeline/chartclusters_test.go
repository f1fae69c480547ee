package pipeline

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
)

// TestChartsPackagePerCluster: `publish package` renders a chart once per
// cluster with the cluster's values file, as run does: the values file
// of cluster global switches web's image from nginx:1 to nginx:2, which
// spec.relatedImages does not list (chart/missing-related re-graded to a
// warning, so that run publishes it). The archive carries nginx:2 (and
// the verify policy checked it), the values file and global's Kubernetes
// version; `push --catalog` on
// the far side, which has no package repo, renders web for global with
// it and commits the state and the catalog files run commits for the same
// chart: the same chart digest, the same images (nginx:2 and nginx:1),
// the same chart sources and ChartRepo.
func TestChartsPackagePerCluster(t *testing.T) {
	e := newChartEnv(t)
	e.pushWeb(t, "1.0.0")
	e.writeChart(t, "web", "1.0.0", "artifact: oci://"+e.reg.Ref("src/charts/web:1.0.0")) // no relatedImages
	e.writeValues(t)
	e.commit(t, "web, with global's values")
	ctx := context.Background()
	regrade := lint.Config{Severity: map[string]lint.Severity{lint.RuleChartMissingRelated: lint.Warning}}

	out := filepath.Join(t.TempDir(), "web.tgz")
	rv := &recordingVerifier{}
	values := func(cluster, art string) string {
		if cluster == "lab" {
			return "values/lab/missing.yaml" // lab does not take web: never read
		}
		return e.options().ChartValues(cluster, art)
	}
	kube := func(c string) string { return map[string]string{"global": "v1.31.0"}[c] }
	_, err := Package(ctx, PackageOptions{Source: e.source, Output: out, Verify: rv, Clusters: []ClusterOptions{{Name: "global"}, {Name: "edge"}, {Name: "lab", Exclude: []string{"web"}}}, ChartValues: values, KubeVersion: kube,
		Mirror: mirror.Options{CAFile: e.reg.CAFile, Src: mirror.Credentials{Username: e.reg.Username, Password: e.reg.Password}}})
	if err != nil {
		t.Fatalf("package: %v", err)
	}
	nginx2 := e.reg.Ref("src/web/nginx:2")
	if !strings.Contains(strings.Join(rv.refs, " "), nginx2) {
		t.Errorf("package did not verify the image global's values render: %v", rv.refs)
	}
	vr, err := archive.Verify(out, archive.Limits{}, nil)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	carried := map[string]bool{}
	for _, im := range vr.Contents.Images {
		carried[im.Ref] = true
	}
	if !carried[nginx2] || !carried[e.reg.Ref("src/web/nginx:1")] {
		t.Errorf("the archive does not carry both images of web: %v", carried)
	}
	var files []string
	for _, f := range vr.Contents.ChartClusters {
		files = append(files, f.Path+"="+strings.TrimSpace(string(f.Data)))
	}
	if got := strings.Join(files, " | "); got != "edge.yaml={} | global.yaml=kubernetesVersion: v1.31.0 | global/web.yaml=image: "+nginx2+" | lab.yaml={}" {
		t.Errorf("the archive's cluster files: %s", got)
	}

	// push --catalog on the far side: no package repo, no values files.
	site := t.TempDir()
	if _, err := git.PlainInit(site, true); err != nil {
		t.Fatal(err)
	}
	e.catalog = site
	po := e.options()
	po.Source, po.ChartValues = "", nil
	if _, err := Push(ctx, PushOptions{Archive: out, Mirror: e.mirrorOptions(), Options: po}); err != nil {
		t.Fatalf("push --catalog: %v", err)
	}
	pushed := e.state(t)["web"]

	// run on the connected side, into another catalog repo.
	ran := t.TempDir()
	if _, err := git.PlainInit(ran, true); err != nil {
		t.Fatal(err)
	}
	e.catalog = ran
	ro := e.options()
	ro.Lint, ro.KubeVersion = regrade, kube
	if _, err := Run(ctx, ro); err != nil {
		t.Fatalf("run: %v", err)
	}
	run := e.state(t)["web"]
	pj, _ := json.Marshal(pushed.Versions)
	rj, _ := json.Marshal(run.Versions)
	if string(pj) != string(rj) || !strings.Contains(string(rj), nginx2) {
		t.Errorf("the state push --catalog commits differs from run's:\npush %s\nrun  %s", pj, rj)
	}
	for _, p := range []string{"charts/global/web/1.0.0/Chart.yaml", "charts/global/web/1.0.0/values.yaml", "charts/global/web/1.0.0/templates/deployment.yaml", "rendered/global/web/chartrepo_web.yaml"} {
		got, want := catalogFileOf(t, site, p), catalogFileOf(t, ran, p)
		if want == "" || strings.ReplaceAll(got, site, ran) != want {
			t.Errorf("%s: push --catalog committed\n%s\nrun committed\n%s", p, got, want)
		}
	}
}

// TestCarriedChartClusters: what push --catalog renders a cluster's charts
// with, from the archive's packages/.clusters/: its values files (paths
// below the written packages), its Kubernetes version, else the site's
// own; an archive that carries nothing gives the charts' own values.
func TestCarriedChartClusters(t *testing.T) {
	o := Options{ChartValues: func(string, string) string { return "values/site.yaml" }, KubeVersion: func(c string) string { return "v1.28.0-" + c }}
	err := carriedChartClusters(&o, []archive.File{
		{Path: "east.yaml", Data: []byte("kubernetesVersion: v1.31.0\n")},
		{Path: "west.yaml", Data: []byte("{}\n")},
		{Path: "east/web.yaml", Data: []byte("image: x\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.ChartValues("east", "web") != "packages/.clusters/east/web.yaml" || o.ChartValues("west", "web") != "" || o.ChartValues("east", "api") != "" {
		t.Errorf("values: %q %q", o.ChartValues("east", "web"), o.ChartValues("west", "web"))
	}
	if o.KubeVersion("east") != "v1.31.0" || o.KubeVersion("west") != "v1.28.0-west" {
		t.Errorf("Kubernetes versions: %q %q", o.KubeVersion("east"), o.KubeVersion("west"))
	}
	o = Options{ChartValues: func(string, string) string { return "values/site.yaml" }}
	if err := carriedChartClusters(&o, nil); err != nil || o.ChartValues != nil || o.KubeVersion("east") != "" {
		t.Errorf("an archive without cluster files: %v", err)
	}
	if err := carriedChartClusters(&o, []archive.File{{Path: "east.yaml", Data: []byte("kubernetesVersion: [\n")}}); err == nil || !strings.Contains(err.Error(), "packages/.clusters/east.yaml") {
		t.Errorf("a cluster file that does not parse: %v", err)
	}
}
