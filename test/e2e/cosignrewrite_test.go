package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/kind"
)

// TestCosignRewrittenChart: with publish.yaml rewriteImages: values,
// `publish run --cosign-key` makes of a chart a new version whose values
// name the destination (0.1.0+mirror.<id>, tagged 0.1.0_mirror.<id> as
// helm push tags it) and signs it: the cosign CLI verifies it with the
// public key and refuses another key.
func TestCosignRewrittenChart(t *testing.T) {
	cosignBin(t)
	const pass = "correct horse battery staple"
	keyFile, pubFile := cosignKeyPair(t, pass)
	_, otherPub := cosignKeyPair(t, "other")
	e := tinyEnv(t)
	c := newCosignCLI(t, e)
	img := e.src.Ref("web/app:1")
	ri, _ := random.Image(256, 1)
	if err := remote.Write(mustRef(t, img), ri, e.src.Options()...); err != nil {
		t.Fatal(err)
	}
	src := e.src.Ref("charts/web:0.1.0")
	ci, err := kind.ChartImage(src, webChartTgz(t, img))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, src), ci, e.src.Options()...); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(e.source, "packages/web/0.1.0/manifest.yaml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	m := "apiVersion: app.alauda.cn/v1beta1\nkind: PackageManifest\nmetadata:\n  name: web.v0.1.0\nspec:\n  type: chart\n  artifact: oci://" + src + "\n  version: v0.1.0\n  relatedImages:\n  - " + img + "\n"
	cfg := "apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nclusters:\n  global:\n    rewriteImages: values\n"
	if os.WriteFile(p, []byte(m), 0o644) != nil || os.WriteFile(filepath.Join(e.source, "publish.yaml"), []byte(cfg), 0o644) != nil {
		t.Fatal("writing the package repo")
	}
	e.commit("a chart whose images are rewritten")
	t.Setenv("PUBLISH_COSIGN_KEY_PASSWORD", pass)
	if out, errOut, code := e.publish("--cosign-key", keyFile); code != 0 {
		t.Fatalf("publish run: exit %d\n%s\n%s", code, out, errOut)
	}
	repo := mustRef(t, e.dstRef(src)).Context()
	tags, err := remote.List(repo, e.dst.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	var tag string
	for _, tg := range tags {
		if strings.HasPrefix(tg, "0.1.0_mirror.") {
			tag = tg
		}
	}
	if tag == "" {
		t.Fatalf("no rewritten chart at %s: tags %v", repo, tags)
	}
	ref := repo.String() + "@" + e.digest(e.dst, repo.String()+":"+tag)
	out := c.verify(t, "", pubFile, ref)
	t.Logf("cosign verify of the rewritten chart %s:\n%s", tag, out)
	c.verify(t, cosignWrongBundle, otherPub, ref)
}

// webChartTgz is the archive of chart web 0.1.0, as helm package makes
// it: a Pod running .Values.image, img by default.
func webChartTgz(t *testing.T, img string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range [][2]string{
		{"web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.1.0\ndescription: A web server.\n"},
		{"web/values.yaml", "image: " + img + "\n"},
		{"web/templates/pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: {{ .Values.image }}\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f[1]))
	}
	if tw.Close() != nil || gz.Close() != nil {
		t.Fatal("packing the chart")
	}
	return buf.Bytes()
}
