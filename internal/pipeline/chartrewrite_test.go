package pipeline

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmregistry "helm.sh/helm/v4/pkg/registry"

	"github.com/operator-publish/publish/internal/chartmuseum"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/sign"
	"github.com/operator-publish/publish/internal/testenv"
)

// rewriteChart is chart "app" 1.0.0: a Deployment whose image is a
// registry/repository/tag block of its values and a CronJob whose image
// is a plain reference, both images of the test registry's src/.
func rewriteChart(t *testing.T, host string) []byte {
	return chartArchive(t, "app", map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: app\nversion: 1.0.0\ndescription: An app and its nightly job.\n",
		"values.yaml": "# the server\nimage:\n  registry: " + host + "\n  repository: src/web/nginx\n  tag: \"1\"\njob:\n  image: " + host + "/src/cron/job:1\n",
		"templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  selector: {matchLabels: {app: app}}\n  template:\n    metadata: {labels: {app: app}}\n    spec:\n      containers:\n      - name: app\n" +
			"        image: {{ .Values.image.registry }}/{{ .Values.image.repository }}:{{ .Values.image.tag }}\n",
		"templates/cronjob.yaml": "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: job\nspec:\n  schedule: \"0 3 * * *\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers:\n          - name: job\n            image: {{ .Values.job.image }}\n",
	})
}

// TestChartsRewriteImages: with publish.yaml clusters.<cluster>.rewriteImages:
// values, `publish run --cosign-key` makes of an OCI chart a new chart
// version 1.0.0+mirror.<id> whose values name the images at the
// destination, pushes it beside the chart (tag 1.0.0_mirror.<id>, as helm
// push tags it), signs it by the key, and the catalog's Git path of the
// version holds it. As a user would, the Helm SDK pulls it from the
// destination and loads it from the catalog, renders it with its own
// values and no redirection of any kind: every image it renders is at the
// destination. The ChartMuseum way uploads the rewritten version, and
// delisting deletes it. A second run changes nothing.
func TestChartsRewriteImages(t *testing.T) {
	e := newChartEnv(t)
	a := rewriteChart(t, e.reg.Host)
	e.digests["app 1.0.0"] = testenv.PushChart(t, e.reg.Ref("src/charts/app:1.0.0"), a, nil, e.reg.Options()...)
	e.writeChart(t, "app", "1.0.0", "artifact: oci://"+e.reg.Ref("src/charts/app:1.0.0"), e.reg.Ref("src/web/nginx:1"), e.reg.Ref("src/cron/job:1"))
	e.commit(t, "app")
	key := chartSigningKey(t)
	var log bytes.Buffer
	o := e.options()
	o.Render.RewriteImages = "values"
	o.Sign = sign.ImageSigner{Key: key}
	o.Log = slog.New(slog.NewTextHandler(&log, nil))
	ctx := context.Background()
	if _, err := Run(ctx, o); err != nil {
		t.Fatalf("run: %v", err)
	}

	// The catalog's Git path of 1.0.0 holds the rewritten chart.
	clone := t.TempDir()
	if _, err := git.PlainClone(clone, false, &git.CloneOptions{URL: e.catalog, ReferenceName: "refs/heads/main"}); err != nil {
		t.Fatal(err)
	}
	fromGit, err := loader.LoadDir(filepath.Join(clone, "charts/global/app/1.0.0"))
	if err != nil {
		t.Fatalf("helm loads app from the catalog's Git path: %v", err)
	}
	version := fromGit.Metadata.Version
	if !strings.HasPrefix(version, "1.0.0+mirror.") {
		t.Fatalf("the catalog holds app %s, want 1.0.0+mirror.<id>", version)
	}
	dstHost := e.reg.Host + "/mirror/"
	want := []string{dstHost + "src/cron/job:1", dstHost + "src/web/nginx:1"}
	e.checkRewritten(t, "the catalog's Git path", helmImages(t, fromGit, nil), want)

	// helm pull from the destination, by the tag helm push gives it.
	rc, err := helmregistry.NewClient(helmregistry.ClientOptHTTPClient(e.httpClient(t)), helmregistry.ClientOptBasicAuth(e.reg.Username, e.reg.Password), helmregistry.ClientOptWriter(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	tag := e.reg.Host + "/mirror/src/charts/app:" + kind.ChartTag(version)
	pulled, err := rc.Pull(tag, helmregistry.PullOptIgnoreMissingProv(true))
	if err != nil {
		t.Fatalf("helm pulls %s: %v", tag, err)
	}
	c, err := loader.LoadArchive(bytes.NewReader(pulled.Chart.Data))
	if err != nil || c.Metadata.Version != version {
		t.Fatalf("the chart at %s: %v, version %v", tag, err, c)
	}
	e.checkRewritten(t, tag, helmImages(t, c, nil), want)
	for _, f := range c.Raw {
		if f.Name == "values.yaml" && !strings.Contains(string(f.Data), "# the server") {
			t.Errorf("values.yaml lost its comment:\n%s", f.Data)
		}
	}

	// Signed by the key, at the rewritten chart's digest.
	repo := mustRef(t, tag).Context()
	desc, err := remote.Head(repo.Digest(pulled.Manifest.Digest), e.reg.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	if signed, err := key.Signed(ctx, repo, *desc, e.reg.Options()); err != nil || !signed {
		t.Errorf("the rewritten chart %s@%s is not signed by the key: %v", tag, desc.Digest, err)
	}
	// The original chart is there too, with its source digest.
	if d, err := remote.Head(mustRef(t, e.reg.Host+"/mirror/src/charts/app:1.0.0"), e.reg.Options()...); err != nil || d.Digest.String() != e.digests["app 1.0.0"] {
		t.Errorf("the chart itself at the destination: %v, %v", d, err)
	}
	if !strings.Contains(log.String(), "rewritten (2 image values) as "+version) {
		t.Errorf("the log does not say what was rewritten:\n%s", log.String())
	}
	if res, err := Run(ctx, o); err != nil || res.Commit != "" {
		t.Fatalf("second run: %+v, %v", res, err)
	}

	// The ChartMuseum way: the rewritten version is uploaded, and
	// deleted with the version it was made of.
	cm := testenv.ChartMuseum(t)
	e.catalog = t.TempDir()
	if _, err := git.PlainInit(e.catalog, true); err != nil {
		t.Fatal(err)
	}
	repoURL := cm.URL + "/public-charts"
	o.Catalog = catalogOpts(e.catalog)
	o.Render.ChartRepo = render.ChartRepoRef{Name: "public-charts", URL: repoURL}
	if _, err := Run(ctx, o); err != nil {
		t.Fatalf("run, the ChartMuseum way: %v", err)
	}
	cmRepo := chartmuseum.Repo{URL: repoURL}
	if vs, err := cmRepo.Versions(ctx, "app"); err != nil || len(vs) != 1 || vs[0] != version {
		t.Fatalf("the ChartMuseum holds app %v (%v), want %s only\n%s", vs, err, version, log.String())
	}
	e.removeVersion(t, "app", "1.0.0")
	e.commit(t, "app delisted")
	if _, err := Run(ctx, o); err != nil {
		t.Fatalf("delist: %v", err)
	}
	if vs, err := cmRepo.Versions(ctx, "app"); err != nil || len(vs) != 0 {
		t.Errorf("after the delist the ChartMuseum holds app %v (%v)", vs, err)
	}
}

// checkRewritten checks that images (what the Helm SDK renders of the
// chart from where) are want, each at the destination.
func (e *chartEnv) checkRewritten(t *testing.T, where string, images, want []string) {
	t.Helper()
	if strings.Join(images, " ") != strings.Join(want, " ") {
		t.Errorf("%s renders %v, want %v", where, images, want)
	}
	for _, img := range images {
		if _, err := remote.Head(mustRef(t, img), e.reg.Options()...); err != nil {
			t.Errorf("%s renders %s, not at the destination: %v", where, img, err)
		}
	}
}

// TestChartsPushRewriteImages: on the air-gapped side, `publish push
// --catalog` into a cluster with rewriteImages: values rewrites each
// chart of the archive with the site's mapping (--dst-registry
// <host>/site): the catalog's Git path holds <version>+mirror.<id>, which
// the Helm SDK renders with its own values to images at the site's
// destination only, and the rewritten chart is at the site, signed.
func TestChartsPushRewriteImages(t *testing.T) {
	e := newChartEnv(t)
	e.pushWeb(t, "1.0.0")
	e.commit(t, "web")
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "charts.tgz")
	cred := mirror.Credentials{Username: e.reg.Username, Password: e.reg.Password}
	if _, err := Package(ctx, PackageOptions{Source: e.source, Output: out, Mirror: mirror.Options{CAFile: e.reg.CAFile, Src: cred}}); err != nil {
		t.Fatalf("package: %v", err)
	}
	o := e.options()
	o.Source = ""
	o.Render.RewriteImages = "values"
	key := chartSigningKey(t)
	o.Sign = sign.ImageSigner{Key: key}
	mo := e.mirrorOptions()
	mo.DstRegistry = e.reg.Host + "/site"
	o.Mirror = mo
	if _, err := Push(ctx, PushOptions{Archive: out, Mirror: mo, Options: o}); err != nil {
		t.Fatalf("push --catalog: %v", err)
	}
	clone := t.TempDir()
	if _, err := git.PlainClone(clone, false, &git.CloneOptions{URL: e.catalog, ReferenceName: "refs/heads/main"}); err != nil {
		t.Fatal(err)
	}
	c, err := loader.LoadDir(filepath.Join(clone, "charts/global/web/1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.Metadata.Version, "1.0.0+mirror.") {
		t.Fatalf("the catalog holds web %s, want 1.0.0+mirror.<id>", c.Metadata.Version)
	}
	e.checkRewritten(t, "web from the catalog", helmImages(t, c, nil), []string{e.reg.Host + "/site/src/web/nginx:1"})
	repo := mustRef(t, e.reg.Host+"/site/src/charts/web:x").Context()
	desc, err := remote.Head(repo.Tag(kind.ChartTag(c.Metadata.Version)), e.reg.Options()...)
	if err != nil {
		t.Fatalf("the rewritten chart at the site: %v", err)
	}
	if signed, err := key.Signed(ctx, repo, *desc, e.reg.Options()); err != nil || !signed {
		t.Errorf("the rewritten chart at the site is not signed: %v", err)
	}
}
