package pipeline

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	helmregistry "helm.sh/helm/v4/pkg/registry"
	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/testenv"
)

// chartArchive packs files (paths below the chart's directory name) as
// `helm package` does: a gzipped tar with every file below name/.
func chartArchive(t *testing.T, name string, files map[string]string) []byte {
	t.Helper()
	below := make(map[string]string, len(files))
	for p, c := range files {
		below[name+"/"+p] = c
	}
	return testenv.ChartArchive(t, below)
}

// chartEnv is a package repo of charts, their images on a registry that
// wants TLS and a password (the Debian docker-registry; sources under
// src/, the destination under mirror/), a classic chart repository over
// HTTP and an empty bare catalog repo.
type chartEnv struct {
	*fixture
	reg      *testenv.Registry
	repoURL  string
	archives map[string][]byte // "web 1.0.0" → the archive pushed
	digests  map[string]string // "web 1.0.0" → the source digest
}

// webChart is chart "web" at version: a Deployment whose image is
// .Values.image (default <host>/src/web/nginx:1) and a ConfigMap.
func webChart(t *testing.T, host, version string) []byte {
	return chartArchive(t, "web", map[string]string{
		"Chart.yaml":                "apiVersion: v2\nname: web\nversion: " + version + "\ndescription: A web server.\n",
		"values.yaml":               "image: " + host + "/src/web/nginx:1\n",
		"templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: {{ .Values.image }}\n",
		"templates/config.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  greeting: hello\n",
	})
}

// cronChart is chart "cron" 0.1.0: a CronJob running <host>/src/cron/job:1.
func cronChart(t *testing.T, host string) []byte {
	return chartArchive(t, "cron", map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: cron\nversion: 0.1.0\ndescription: A nightly job.\n",
		"values.yaml":            "image: " + host + "/src/cron/job:1\nschedule: \"0 3 * * *\"\n",
		"templates/cronjob.yaml": "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: cron\nspec:\n  schedule: {{ .Values.schedule | quote }}\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers:\n          - name: job\n            image: {{ .Values.image }}\n",
	})
}

func newChartEnv(t *testing.T) *chartEnv {
	t.Helper()
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	e := &chartEnv{fixture: &fixture{source: t.TempDir(), catalog: t.TempDir()}, reg: reg,
		archives: map[string][]byte{}, digests: map[string]string{}}
	for _, img := range []string{"src/web/nginx:1", "src/web/nginx:2", "src/cron/job:1"} {
		ri, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := name.ParseReference(reg.Ref(img))
		if err := remote.Write(r, ri, reg.Options()...); err != nil {
			t.Fatal(err)
		}
	}
	cron := cronChart(t, reg.Host)
	e.archives["cron 0.1.0"] = cron
	mux := http.NewServeMux()
	mux.HandleFunc("/stable/index.yaml", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "apiVersion: v1\nentries:\n  cron:\n  - name: cron\n    version: 0.1.0\n    urls: [cron-0.1.0.tgz]\n")
	})
	mux.HandleFunc("/stable/cron-0.1.0.tgz", func(w http.ResponseWriter, _ *http.Request) { w.Write(cron) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.repoURL = srv.URL + "/stable"
	var err error
	if e.repo, err = git.PlainInit(e.source, false); err != nil {
		t.Fatal(err)
	}
	if _, err := git.PlainInit(e.catalog, true); err != nil {
		t.Fatal(err)
	}
	return e
}

// pushWeb pushes chart web at version, with a provenance file, to
// src/charts/web:<version> and writes its manifest.
func (e *chartEnv) pushWeb(t *testing.T, version string) {
	t.Helper()
	a := webChart(t, e.reg.Host, version)
	e.archives["web "+version] = a
	e.digests["web "+version] = testenv.PushChart(t, e.reg.Ref("src/charts/web:"+version), a, []byte("-----BEGIN PGP SIGNED MESSAGE-----\nweb "+version+"\n"), e.reg.Options()...)
	e.writeChart(t, "web", version, "artifact: oci://"+e.reg.Ref("src/charts/web:"+version), e.reg.Ref("src/web/nginx:2"))
}

// writeChart writes the manifest of chart art at version with the
// spec.artifact (and spec.chart) lines source and relatedImages images.
func (e *chartEnv) writeChart(t *testing.T, art, version, source string, images ...string) {
	t.Helper()
	m := "apiVersion: app.alauda.cn/v1beta1\nkind: PackageManifest\nmetadata:\n  name: " + art + ".v" + version + "\nspec:\n  type: chart\n  " + source + "\n  version: v" + version + "\n  relatedImages:\n"
	for _, img := range images {
		m += "  - " + img + "\n"
	}
	p := filepath.Join(e.source, "packages", art, version, "manifest.yaml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeValues writes cluster global's values file of web: the image
// nginx:2 instead of the chart's nginx:1.
func (e *chartEnv) writeValues(t *testing.T) {
	t.Helper()
	os.MkdirAll(filepath.Join(e.source, "values/global"), 0o755)
	if err := os.WriteFile(filepath.Join(e.source, "values/global/web.yaml"), []byte("image: "+e.reg.Ref("src/web/nginx:2")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// removeVersion removes the manifest of art at version.
func (e *chartEnv) removeVersion(t *testing.T, art, version string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(e.source, "packages", art, version)); err != nil {
		t.Fatal(err)
	}
}

func (e *chartEnv) mirrorOptions() mirror.Options {
	cred := mirror.Credentials{Username: e.reg.Username, Password: e.reg.Password}
	return mirror.Options{DstRegistry: e.reg.Host + "/mirror", CAFile: e.reg.CAFile, Src: cred, Dst: cred}
}

func (e *chartEnv) options() Options {
	return Options{Source: e.source, Cluster: "global", Mirror: e.mirrorOptions(), Catalog: catalogOpts(e.catalog), AllowEmpty: true,
		ChartValues: func(cluster, art string) string {
			p := "values/" + cluster + "/" + art + ".yaml" // when there is one
			if _, err := os.Stat(filepath.Join(e.source, p)); err == nil {
				return p
			}
			return ""
		}}
}

// state reads the catalog's state of cluster global.
func (e *chartEnv) state(t *testing.T) map[string]model.ArtifactRecord {
	t.Helper()
	var st gitops.State
	if err := yaml.Unmarshal([]byte(e.catalogFile(t, gitops.StatePath("global"))), &st); err != nil {
		t.Fatal(err)
	}
	out := map[string]model.ArtifactRecord{}
	for _, a := range st.Artifacts {
		out[a.Name] = a
	}
	return out
}

// httpClient is an HTTP client that trusts the registry's CA.
func (e *chartEnv) httpClient(t *testing.T) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(e.reg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// TestChartsRunGitWay: `publish run` over two charts, one OCI (with a
// provenance layer) and one of a classic repository, on a registry that
// wants TLS and a password. The OCI chart is at the destination with its
// source digest and its .prov layer, the classic one as an OCI chart
// (Helm's media types) whose digest the state records; the images the
// charts render with the cluster's values are mirrored, not the one the
// chart's own values name. The catalog holds each chart's files under
// charts/global/<chart>/<version>/ byte for byte and a ChartRepo of type
// Git pointing at charts/global/<chart>. As a user would, the Helm SDK
// loads the chart from the catalog's Git path and pulls it from the
// destination by the reference the catalog records, renders it with the
// cluster's values, and every image it renders is at the destination.
// Then upgrade, delist and relist, and a second run that changes nothing.
func TestChartsRunGitWay(t *testing.T) {
	e := newChartEnv(t)
	e.pushWeb(t, "1.0.0")
	e.writeChart(t, "cron", "0.1.0", "artifact: "+e.repoURL+"\n  chart: cron", e.reg.Ref("src/cron/job:1"))
	e.writeValues(t)
	e.commit(t, "two charts")

	res, err := Run(context.Background(), e.options())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Commit == "" {
		t.Fatal("no commit")
	}
	st := e.state(t)
	web, cron := st["web"], st["cron"]
	if web.Type != "chart" || cron.Type != "chart" || len(web.Versions) != 1 || len(cron.Versions) != 1 {
		t.Fatalf("state: %+v %+v", web, cron)
	}
	if got := web.Versions[0].BundleDigest; got != e.digests["web 1.0.0"] {
		t.Errorf("web's digest at the destination %s, want the source's %s", got, e.digests["web 1.0.0"])
	}
	e.checkDestination(t, web, cron)
	e.checkCatalog(t, "web", "1.0.0")
	e.checkCatalog(t, "cron", "0.1.0")
	e.helmAsUser(t, web, "web", "1.0.0", []string{e.reg.Ref("src/web/nginx:2")})
	e.helmAsUser(t, cron, "cron", "0.1.0", []string{e.reg.Ref("src/cron/job:1")})
	if _, err := remote.Head(mustRef(t, e.reg.Ref("mirror/src/web/nginx:1")), e.reg.Options()...); err == nil {
		t.Error("nginx:1, which the cluster's values replace, was mirrored")
	}

	// publish mirror copies the same charts, digests unchanged.
	mo := e.mirrorOptions()
	mo.DstRegistry = e.reg.Host + "/other"
	mres, err := Mirror(context.Background(), MirrorOptions{Source: e.source, Mirror: mo})
	if err != nil {
		t.Fatalf("mirror: %v", err)
	}
	got := map[string]string{}
	for _, r := range mres.Report.Images {
		got[r.Destination] = r.Digest
	}
	if got[e.reg.Ref("other/src/charts/web:1.0.0")] != e.digests["web 1.0.0"] || got[e.reg.Ref("other/stable/cron:0.1.0")] != cron.Versions[0].BundleDigest {
		t.Errorf("publish mirror's report: %v", got)
	}

	// A run with nothing new changes nothing.
	if res, err := Run(context.Background(), e.options()); err != nil || res.Commit != "" {
		t.Fatalf("second run: commit %q, %v", res.Commit, err)
	}

	// Upgrade: web 1.1.0 beside 1.0.0.
	e.pushWeb(t, "1.1.0")
	e.commit(t, "web 1.1.0")
	if _, err := Run(context.Background(), e.options()); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	e.checkCatalog(t, "web", "1.0.0")
	e.checkCatalog(t, "web", "1.1.0")

	// Delist web 1.0.0 and the whole cron chart in one commit.
	e.removeVersion(t, "web", "1.0.0")
	os.RemoveAll(filepath.Join(e.source, "packages/cron"))
	e.commit(t, "delist")
	res, err = Run(context.Background(), e.options())
	if err != nil {
		t.Fatalf("delist: %v", err)
	}
	if e.catalogFile(t, "charts/global/web/1.0.0/Chart.yaml") != "" || e.catalogFile(t, "charts/global/cron/0.1.0/Chart.yaml") != "" {
		t.Error("a delisted version's sources are still in the catalog")
	}
	if e.catalogFile(t, "rendered/global/cron/chartrepo_cron.yaml") != "" {
		t.Error("the ChartRepo of a delisted chart is still rendered")
	}
	e.checkCatalog(t, "web", "1.1.0")
	if st := e.state(t); st["cron"].Present || st["web"].Versions[0].Present {
		t.Errorf("state after delisting: %+v", st)
	}
	if got := strings.Join(res.Changes.Delisted, "; "); got != "cron (artifact); web 1.0.0" {
		t.Errorf("delisted %q", got)
	}

	// Relist web 1.0.0: its sources come back as they were.
	e.pushWeb(t, "1.0.0")
	e.commit(t, "relist")
	if _, err := Run(context.Background(), e.options()); err != nil {
		t.Fatalf("relist: %v", err)
	}
	e.checkCatalog(t, "web", "1.0.0")
}

// checkDestination checks the charts at the destination: web with its
// source digest and both layers (the chart and its provenance), cron as
// an OCI chart of Helm's media types holding the repository's archive.
func (e *chartEnv) checkDestination(t *testing.T, web, cron model.ArtifactRecord) {
	t.Helper()
	img, err := remote.Image(mustRef(t, web.Registry+"/"+web.Repository+":1.0.0"), e.reg.Options()...)
	if err != nil {
		t.Fatalf("web at the destination: %v", err)
	}
	m, _ := img.Manifest()
	var mts []string
	for _, l := range m.Layers {
		mts = append(mts, string(l.MediaType))
	}
	if strings.Join(mts, ",") != helmregistry.ChartLayerMediaType+","+helmregistry.ProvLayerMediaType {
		t.Errorf("web's layers at the destination: %v", mts)
	}
	ref := cron.Registry + "/" + cron.Repository + ":0.1.0"
	img, err = remote.Image(mustRef(t, ref), e.reg.Options()...)
	if err != nil {
		t.Fatalf("cron at the destination: %v", err)
	}
	m, _ = img.Manifest()
	if d, _ := img.Digest(); d.String() != cron.Versions[0].BundleDigest {
		t.Errorf("cron's digest %s, the state records %s", d, cron.Versions[0].BundleDigest)
	}
	if m.Config.MediaType != helmregistry.ConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != helmregistry.ChartLayerMediaType {
		t.Errorf("cron at the destination is not a Helm OCI chart: %+v", m)
	}
	ls, _ := img.Layers()
	rc, _ := ls[0].Compressed()
	data, _ := io.ReadAll(rc)
	if !bytes.Equal(data, e.archives["cron 0.1.0"]) {
		t.Error("cron's chart layer is not the repository's archive")
	}
}

// checkCatalog checks that the catalog holds chart's version as the
// files of its archive, byte for byte, and its ChartRepo.
func (e *chartEnv) checkCatalog(t *testing.T, chartName, version string) {
	t.Helper()
	c, err := loader.LoadArchive(bytes.NewReader(e.archives[chartName+" "+version]))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Raw) < 3 {
		t.Fatalf("the archive of %s %s holds %d files", chartName, version, len(c.Raw))
	}
	for _, f := range c.Raw {
		if got := e.catalogFile(t, "charts/global/"+chartName+"/"+version+"/"+f.Name); got != string(f.Data) {
			t.Errorf("charts/global/%s/%s/%s differs from the archive:\n%s", chartName, version, f.Name, got)
		}
	}
	repo := e.catalogFile(t, "rendered/global/"+chartName+"/chartrepo_"+chartName+".yaml")
	for _, want := range []string{"kind: ChartRepo", "apiVersion: app.alauda.io/v1beta1", "type: Git", "path: charts/global/" + chartName, "url: " + e.catalog} {
		if !strings.Contains(repo, want) {
			t.Errorf("the ChartRepo of %s lacks %q:\n%s", chartName, want, repo)
		}
	}
}

// helmAsUser is what a user of the cluster does with the chart, through
// the Helm SDK: load it from the catalog's Git path (a clone of the
// catalog repo), pull it from the destination (TLS, password) by the
// reference the state records, check both are the chart published,
// render it with the cluster's values, and find every image it renders
// at the destination (the state's image records: source → destination).
func (e *chartEnv) helmAsUser(t *testing.T, rec model.ArtifactRecord, chartName, version string, wantImages []string) {
	t.Helper()
	clone := t.TempDir()
	if _, err := git.PlainClone(clone, false, &git.CloneOptions{URL: e.catalog, ReferenceName: "refs/heads/main"}); err != nil {
		t.Fatal(err)
	}
	fromGit, err := loader.LoadDir(filepath.Join(clone, "charts/global", chartName, version))
	if err != nil {
		t.Fatalf("helm loads %s from the catalog's Git path: %v", chartName, err)
	}
	rc, err := helmregistry.NewClient(helmregistry.ClientOptHTTPClient(e.httpClient(t)), helmregistry.ClientOptBasicAuth(e.reg.Username, e.reg.Password), helmregistry.ClientOptWriter(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	var vr model.VersionRecord
	for _, v := range rec.Versions {
		if v.Version == version {
			vr = v
		}
	}
	pulled, err := rc.Pull(rec.Registry+"/"+rec.Repository+":"+vr.Tag, helmregistry.PullOptIgnoreMissingProv(true), helmregistry.PullOptWithProv(true))
	if err != nil {
		t.Fatalf("helm pulls %s from the destination: %v", chartName, err)
	}
	if pulled.Manifest.Digest != vr.BundleDigest {
		t.Errorf("helm pulled %s, the catalog records %s", pulled.Manifest.Digest, vr.BundleDigest)
	}
	if !bytes.Equal(pulled.Chart.Data, e.archives[chartName+" "+version]) {
		t.Errorf("the chart helm pulls is not the one published")
	}
	if fromGit.Name() != chartName || fromGit.Metadata.Version != version {
		t.Errorf("the catalog's Git path holds %s %s", fromGit.Name(), fromGit.Metadata.Version)
	}
	vals := map[string]any{}
	if data, err := os.ReadFile(filepath.Join(e.source, "values/global", chartName+".yaml")); err == nil {
		yaml.Unmarshal(data, &vals)
	}
	images := helmImages(t, fromGit, vals)
	if strings.Join(images, ",") != strings.Join(wantImages, ",") {
		t.Errorf("%s renders %v, want %v", chartName, images, wantImages)
	}
	dest := map[string]string{}
	for _, img := range vr.Images {
		dest[img.Source] = img.Destination
	}
	for _, img := range images {
		d, ok := dest[img]
		if !ok {
			t.Errorf("%s renders %s, which the catalog does not map to the destination", chartName, img)
			continue
		}
		if _, err := remote.Head(mustRef(t, d), e.reg.Options()...); err != nil {
			t.Errorf("%s renders %s: not at the destination %s: %v", chartName, img, d, err)
		}
	}
}

// helmImages renders c as `helm template` does (the Helm SDK's
// dependency processing, render values and template engine, release
// name the chart, namespace default) with vals and returns the images of
// its containers in full (lint.FullImage), sorted, each once.
func helmImages(t *testing.T, c *chart.Chart, vals map[string]any) []string {
	t.Helper()
	if err := chartutil.ProcessDependencies(c, vals); err != nil {
		t.Fatal(err)
	}
	top, err := commonutil.ToRenderValues(c, vals, common.ReleaseOptions{Name: c.Name(), Namespace: "default", IsInstall: true, Revision: 1}, common.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Engine{}.RenderWithContext(context.Background(), c, top)
	if err != nil {
		t.Fatalf("helm renders %s: %v", c.Name(), err)
	}
	var out []string
	for _, data := range files {
		for _, line := range strings.Split(data, "\n") {
			if s, ok := strings.CutPrefix(strings.TrimSpace(line), "image: "); ok {
				out = append(out, lint.FullImage(strings.Trim(s, `"`)))
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// TestChartsBrokenStopRun: a chart whose template does not render, and a
// manifest whose version is not its chart's, stop `publish run` with
// their lint errors at the manifest's spec.artifact line: nothing
// mirrored, nothing committed.
func TestChartsBrokenStopRun(t *testing.T) {
	e := newChartEnv(t)
	bad := chartArchive(t, "web", map[string]string{
		"Chart.yaml":                "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"templates/deployment.yaml": "kind: Deployment\nimage: {{ .Values.image \n",
	})
	testenv.PushChart(t, e.reg.Ref("src/charts/web:1.0.0"), bad, nil, e.reg.Options()...)
	e.writeChart(t, "web", "1.0.0", "artifact: oci://"+e.reg.Ref("src/charts/web:1.0.0"), e.reg.Ref("src/web/nginx:2"))
	testenv.PushChart(t, e.reg.Ref("src/charts/cron:0.1.0"), cronChart(t, e.reg.Host), nil, e.reg.Options()...)
	e.writeChart(t, "cron", "0.2.0", "artifact: oci://"+e.reg.Ref("src/charts/cron:0.1.0"), e.reg.Ref("src/cron/job:1"))
	e.commit(t, "broken charts")
	_, err := Run(context.Background(), e.options())
	if err == nil {
		t.Fatal("run of broken charts succeeded")
	}
	for _, want := range []string{"packages/web/1.0.0/manifest.yaml:7", "chart/render", "packages/cron/0.2.0/manifest.yaml:7", "chart/metadata"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("run of broken charts: the error lacks %q:\n%v", want, err)
		}
	}
	if cat, err := git.PlainOpen(e.catalog); err != nil {
		t.Fatal(err)
	} else if head, err := cat.Head(); err == nil {
		t.Errorf("a run that stopped committed %s", head.Hash())
	}
	if _, err := remote.Head(mustRef(t, e.reg.Ref("mirror/src/cron/job:1")), e.reg.Options()...); err == nil {
		t.Error("a run that stopped at lint mirrored an image")
	}
}

// recordingVerifier verifies every reference and records which.
type recordingVerifier struct {
	mu   sync.Mutex
	refs []string
}

func (r *recordingVerifier) Verify(_ context.Context, ref string, _ []remote.Option) model.Verification {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refs = append(r.refs, ref)
	return model.Verification{Image: ref, Status: model.VerifyVerified, Mode: "enforce"}
}

func (r *recordingVerifier) Unmatched([]string) (string, []config.VerifyEntry) { return "", nil }

// TestChartsVerify: a signature policy (publish.yaml verify) checks an
// OCI chart and every image a chart renders or lists, before anything is
// mirrored; a chart of a classic repository, in no registry, is not asked
// for a signature, its images are.
func TestChartsVerify(t *testing.T) {
	e := newChartEnv(t)
	e.pushWeb(t, "1.0.0")
	e.writeChart(t, "cron", "0.1.0", "artifact: "+e.repoURL+"\n  chart: cron", e.reg.Ref("src/cron/job:1"))
	e.writeValues(t)
	e.commit(t, "two charts")
	rv := &recordingVerifier{}
	o := e.options()
	o.Verify = rv
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatalf("run: %v", err)
	}
	sort.Strings(rv.refs)
	want := []string{e.reg.Ref("src/charts/web:1.0.0"), e.reg.Ref("src/cron/job:1"), e.reg.Ref("src/web/nginx:2")}
	sort.Strings(want)
	if strings.Join(rv.refs, " ") != strings.Join(want, " ") {
		t.Errorf("verified %v, want %v", rv.refs, want)
	}
}
