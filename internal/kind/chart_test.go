package kind_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/testenv"
)

// webChart is a chart with a Deployment (an initContainer and an image
// from the values), a CronJob, a helm.sh/images annotation, and a
// subchart (cache: a StatefulSet and an artifacthub.io/images annotation)
// that a value turns off.
func webChart(t *testing.T) []byte {
	return testenv.ChartArchive(t, map[string]string{
		"web/Chart.yaml": `apiVersion: v2
name: web
version: 1.2.3
description: A web server.
annotations:
  helm.sh/images: |
    - name: sidecar
      image: registry.example.com/web/sidecar:1.0
    - name: cache-backup
      image: registry.example.com/web/cache-backup:3
      dependency: cache
dependencies:
- name: cache
  version: 0.1.0
  condition: cache.enabled
`,
		"web/values.yaml": "image: registry.example.com/web/nginx:1.27\ncache:\n  enabled: true\n",
		"web/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers:
      - name: init
        image: registry.example.com/web/init:1
      containers:
      - name: web
        image: {{ .Values.image }}
`,
		"web/templates/cronjob.yaml": `apiVersion: batch/v1
kind: CronJob
metadata:
  name: {{ .Release.Name }}-backup
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: backup
            image: registry.example.com/web/backup:2
          - name: shell
            image: busybox:1.36
`,
		"web/templates/NOTES.txt":     "Installed {{ .Release.Name }}.\n",
		"web/charts/cache/Chart.yaml": "apiVersion: v2\nname: cache\nversion: 0.1.0\nannotations:\n  artifacthub.io/images: |\n    - name: exporter\n      image: registry.example.com/web/redis-exporter:1\n",
		"web/charts/cache/templates/statefulset.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Release.Name }}-cache
spec:
  serviceName: cache
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec:
      containers:
      - name: redis
        image: registry.example.com/web/redis:7
`,
	})
}

const chartManifest = `apiVersion: app.alauda.cn/v1beta1
kind: PackageManifest
metadata:
  name: %s.v%s
spec:
  type: chart
  artifact: %s
  version: v%s
  info:
    displayName: %s
  relatedImages:
%s`

// chartPM parses a chart manifest at packages/<artifact>/<version>/manifest.yaml.
func chartPM(t *testing.T, artifact, version, ref string, related ...string) (*manifest.PackageManifest, manifest.File) {
	t.Helper()
	return chartRepoPM(t, artifact, version, ref, "", related...)
}

// chartRepoPM is chartPM with spec.chart (a chart of a chart repository;
// "" for none).
func chartRepoPM(t *testing.T, artifact, version, ref, chart string, related ...string) (*manifest.PackageManifest, manifest.File) {
	t.Helper()
	var rel strings.Builder
	for _, r := range related {
		rel.WriteString("  - " + r + "\n")
	}
	if len(related) == 0 {
		rel.WriteString("  - registry.example.com/unused:1\n")
	}
	data := fmt.Sprintf(chartManifest, artifact, version, ref, version, artifact, rel.String())
	if chart != "" {
		data = strings.Replace(data, "  version: v", "  chart: "+chart+"\n  version: v", 1)
	}
	path := "packages/" + artifact + "/" + version + "/manifest.yaml"
	m, err := manifest.Parse(path, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return m, manifest.File{Path: path, Data: []byte(data)}
}

// TestChartKindImagesPerCluster: a chart pushed as an OCI artifact is read
// through the chart kind once per cluster, with each cluster's values
// file: the images are those of every workload (init containers and the
// CronJob's included, a short name written in full), of the annotations of the chart and its subchart
// (an entry of a disabled subchart left out), and the values switch an
// image and the subchart per cluster; the
// clusters of a run share a read only when their values are the same.
func TestChartKindImagesPerCluster(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	testenv.PushChart(t, host+"/charts/web:1.2.3", webChart(t), nil)
	mc, err := mirror.New(mirror.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]*kind.ValuesFile{
		"east": {Path: "values/east/web.yaml", Data: []byte("image: registry.example.com/web/nginx:1.27-east\n")},
		"west": {Path: "values/west/web.yaml", Data: []byte("cache:\n  enabled: false\n")},
	}
	env := func(cluster string) kind.Env {
		return kind.Env{Client: mc, Cluster: cluster, Values: func(c, artifact string) (*kind.ValuesFile, error) {
			if artifact != "web" {
				t.Errorf("values asked for artifact %q", artifact)
			}
			return values[c], nil
		}}
	}
	base := []string{"docker.io/library/busybox:1.36", "registry.example.com/web/backup:2", "registry.example.com/web/init:1", "registry.example.com/web/sidecar:1.0"}
	want := map[string][]string{
		"":      append([]string{"registry.example.com/web/nginx:1.27", "registry.example.com/web/redis-exporter:1", "registry.example.com/web/redis:7", "registry.example.com/web/cache-backup:3"}, base...),
		"east":  append([]string{"registry.example.com/web/nginx:1.27-east", "registry.example.com/web/redis-exporter:1", "registry.example.com/web/redis:7", "registry.example.com/web/cache-backup:3"}, base...),
		"west":  append([]string{"registry.example.com/web/nginx:1.27"}, base...),
		"north": append([]string{"registry.example.com/web/nginx:1.27", "registry.example.com/web/redis-exporter:1", "registry.example.com/web/redis:7", "registry.example.com/web/cache-backup:3"}, base...),
	}
	cache := kind.NewCache()
	keys := map[string]string{}
	for _, cluster := range []string{"", "east", "west", "north"} {
		m, _ := chartPM(t, "web", "1.2.3", "oci://"+host+"/charts/web:1.2.3", "registry.example.com/web/sidecar:1.0")
		vs := model.NewVersions([]*manifest.PackageManifest{m})
		if err := cache.Read(context.Background(), env(cluster), vs); err != nil {
			t.Fatal(err)
		}
		c := kind.ChartOf(vs[0])
		if c == nil {
			t.Fatalf("cluster %q: no chart read: %v", cluster, vs[0].ReadErr)
		}
		sort.Strings(want[cluster])
		if !reflect.DeepEqual(c.Images, want[cluster]) {
			t.Errorf("cluster %q: images %v, want %v", cluster, c.Images, want[cluster])
		}
		if c.Name != "web" || c.Version != "1.2.3" || c.Objects < 2 || c.RenderErr != nil {
			t.Errorf("cluster %q: chart %+v", cluster, c)
		}
		if vs[0].Images[0] != "registry.example.com/web/sidecar:1.0" || len(vs[0].Images) != len(want[cluster]) {
			t.Errorf("cluster %q: version images %v", cluster, vs[0].Images)
		}
		if name, desc := vs[0].Content.Info(); name != "web" || desc != "A web server." {
			t.Errorf("info %q %q", name, desc)
		}
		k, _ := kind.Lookup(manifest.TypeChart)
		keys[cluster] = k.Key(env(cluster), vs[0])
	}
	if keys["east"] == keys["west"] || keys["east"] == keys[""] || !strings.Contains(keys["east"], "east") {
		t.Errorf("the key does not hold the cluster and its values: %q", keys)
	}
	values["east"] = &kind.ValuesFile{Path: "values/east/web.yaml", Data: []byte("image: other:1\n")}
	k, _ := kind.Lookup(manifest.TypeChart)
	m, _ := chartPM(t, "web", "1.2.3", "oci://"+host+"/charts/web:1.2.3")
	if got := k.Key(env("east"), model.NewVersions([]*manifest.PackageManifest{m})[0]); got == keys["east"] {
		t.Error("the key does not change with the values file's content")
	}
}

// TestChartKindLint: the chart kind gives the lint engine what the chart
// rules check, each finding at the manifest's spec.artifact line: a
// rendered image spec.relatedImages does not list (error), a listed one
// the chart never renders (warning), Chart.yaml's version against
// spec.version, a template that does not render (a finding, not a
// crash), a chart that renders nothing, a chart missing at the source,
// and the olm target's refusal.
func TestChartKindLint(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	testenv.PushChart(t, host+"/charts/web:1.2.3", webChart(t), nil)
	testenv.PushChart(t, host+"/charts/web:1.2.4", webChart(t), nil) // Chart.yaml says 1.2.3
	testenv.PushChart(t, host+"/charts/bad:0.1.0", testenv.ChartArchive(t, map[string]string{
		"bad/Chart.yaml":                "apiVersion: v2\nname: bad\nversion: 0.1.0\n",
		"bad/templates/deployment.yaml": "kind: Deployment\nimage: {{ .Values.image | nosuchfunc }}\n",
	}), nil)
	testenv.PushChart(t, host+"/charts/empty:0.1.0", testenv.ChartArchive(t, map[string]string{
		"empty/Chart.yaml":          "apiVersion: v2\nname: empty\nversion: 0.1.0\n",
		"empty/templates/NOTES.txt": "nothing\n",
	}), nil)
	mc, err := mirror.New(mirror.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	var ms []*manifest.PackageManifest
	var files []manifest.File
	for _, c := range []struct{ artifact, version, ref string }{
		{"web", "1.2.3", "oci://" + host + "/charts/web:1.2.3"},
		{"web", "1.2.4", host + "/charts/web:1.2.4"},
		{"bad", "0.1.0", "oci://" + host + "/charts/bad:0.1.0"},
		{"empty", "0.1.0", "oci://" + host + "/charts/empty:0.1.0"},
		{"gone", "1.0.0", "oci://" + host + "/charts/gone:1.0.0"},
	} {
		m, f := chartPM(t, c.artifact, c.version, c.ref, "registry.example.com/web/sidecar:1.0", "registry.example.com/web/nginx:1.27", "registry.example.com/web/old:1")
		ms, files = append(ms, m), append(files, f)
	}
	vs := model.NewVersions(ms)
	env := kind.Env{Client: mc}
	if err := kind.Read(context.Background(), env, vs); err != nil {
		t.Fatal(err)
	}
	in := lint.Input{Files: files}
	kind.Lint(&in, env, vs)
	got := map[string]bool{}
	for _, f := range lint.Run(context.Background(), lint.Config{}, in) {
		if strings.HasPrefix(f.Rule, "chart/") {
			got[fmt.Sprintf("%s:%d %s %s %s", f.Path, f.Line, f.Severity, f.Rule, f.Message)] = true
		}
	}
	for _, w := range []string{
		"packages/web/1.2.3/manifest.yaml:7 error chart/missing-related the chart renders image registry.example.com/web/backup:2,",
		"packages/web/1.2.3/manifest.yaml:7 error chart/missing-related the chart renders image registry.example.com/web/redis:7,",
		"packages/web/1.2.3/manifest.yaml:7 warning chart/unused-related spec.relatedImages lists registry.example.com/web/old:1,",
		"packages/web/1.2.4/manifest.yaml:7 error chart/metadata Chart.yaml's version is \"1.2.3\"",
		"packages/bad/0.1.0/manifest.yaml:7 error chart/render the chart bad 0.1.0",
		"packages/empty/0.1.0/manifest.yaml:7 error chart/empty the chart empty 0.1.0",
		"packages/gone/1.0.0/manifest.yaml:7 error chart/not-found chart " + host + "/charts/gone:1.0.0: not found",
	} {
		if !hasPrefix(got, w) {
			t.Errorf("no finding %q in:\n%s", w, strings.Join(keysOf(got), "\n"))
		}
	}
	helm := false
	for g := range got {
		helm = helm || strings.HasPrefix(g, "packages/bad/0.1.0/manifest.yaml:7 error chart/helm")
		if strings.Contains(g, "web/1.2.3") && strings.Contains(g, "sidecar") {
			t.Errorf("a listed image that the chart annotates is reported: %s", g)
		}
	}
	if !helm {
		t.Errorf("Helm's checks did not report the broken template:\n%s", strings.Join(keysOf(got), "\n"))
	}

	in.RefuseCharts = "olm"
	for _, f := range lint.Run(context.Background(), lint.Config{}, in) {
		if strings.HasPrefix(f.Rule, "chart/") && (f.Rule != lint.RuleChartTarget || !strings.Contains(f.Message, "olm target")) {
			t.Errorf("on an olm cluster: %s", f)
		}
	}
}

func hasPrefix(got map[string]bool, prefix string) bool {
	for g := range got {
		if strings.HasPrefix(g, prefix) {
			return true
		}
	}
	return false
}

func keysOf(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestChartKindTLSAuthAndRepository: a chart is read from a registry that
// wants TLS and a password (the Debian docker-registry) with the
// command's source credentials and CA, and from a classic chart
// repository (index.yaml, then the archive it names); a version the
// index does not list is the version's read error.
func TestChartKindTLSAuthAndRepository(t *testing.T) {
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	archive := webChart(t)
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: static.NewLayer(archive, "application/vnd.cncf.helm.chart.content.v1.tar+gzip")})
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), "application/vnd.cncf.helm.config.v1+json")
	ref, err := name.ParseReference(reg.Ref("charts/web:1.2.3"))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, reg.Options()...); err != nil {
		t.Fatal(err)
	}
	mc, err := mirror.New(mirror.Options{CAFile: reg.CAFile, Src: mirror.Credentials{Username: reg.Username, Password: reg.Password}, SrcHosts: []string{reg.Host}})
	if err != nil {
		t.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/stable/index.yaml", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "apiVersion: v1\nentries:\n  web:\n  - name: web\n    version: 1.2.3\n    urls: [archives/web-1.2.3.tgz]\n")
	})
	mux.HandleFunc("/stable/archives/web-1.2.3.tgz", func(w http.ResponseWriter, _ *http.Request) { w.Write(archive) })
	repo := httptest.NewServer(mux)
	t.Cleanup(repo.Close)

	oci, _ := chartPM(t, "web", "1.2.3", "oci://"+reg.Ref("charts/web:1.2.3"))
	classic, _ := chartRepoPM(t, "web", "1.2.3", repo.URL+"/stable", "web")
	missing, _ := chartRepoPM(t, "web", "1.2.4", repo.URL+"/stable", "web")
	vs := model.NewVersions([]*manifest.PackageManifest{oci, classic, missing})
	if err := kind.Read(context.Background(), kind.Env{Client: mc}, vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs[:2] {
		c := kind.ChartOf(v)
		if c == nil {
			t.Fatalf("%s: not read: %v", v.Manifest.Spec.Artifact, v.ReadErr)
		}
		if len(c.Images) != 8 || c.Name != "web" {
			t.Errorf("%s: %+v", v.Manifest.Spec.Artifact, c)
		}
	}
	if want := strings.TrimPrefix(repo.URL, "http://") + "/stable/web:1.2.3"; vs[1].Ref() != want {
		t.Errorf("the repository chart's reference is %q, want %q", vs[1].Ref(), want)
	}
	if vs[2].ReadErr == nil || !strings.Contains(vs[2].ReadErr.Error(), "chart web version 1.2.4 is not in the repository's index.yaml") {
		t.Errorf("a version the index does not list: %v", vs[2].ReadErr)
	}
}
