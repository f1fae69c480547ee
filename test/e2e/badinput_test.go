package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/bundle"
)

// tinyEnv is a world with one operator, tiny 1.0.0, published once.
func tinyEnv(t *testing.T) *env {
	e := newEnv(t)
	for _, img := range []string{"tiny/manager:v1.0.0", "tiny/worker:v1.0.0"} {
		ri, _ := random.Image(512, 1)
		if err := remote.Write(mustRef(t, e.src.Ref(img)), ri, e.src.Options()...); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	from := "../../internal/pipeline/testdata/bundles/tiny/1.0.0"
	filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		data, _ := os.ReadFile(p)
		os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755)
		return os.WriteFile(filepath.Join(dir, rel), []byte(strings.ReplaceAll(string(data), "REGISTRY", e.src.Host)), 0o644)
	})
	img, err := bundle.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, e.src.Ref("tiny/bundle:v1.0.0")), img, e.src.Options()...); err != nil {
		t.Fatal(err)
	}
	e.writeManifest("tiny", "1.0.0", e.src.Ref("tiny/bundle:v1.0.0"))
	e.commit("add tiny")
	return e
}

func (e *env) writeManifest(art, version, bundleRef string) string {
	p := filepath.Join(e.source, "packages", art, version, "manifest.yaml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	s := `apiVersion: app.alauda.cn/v1beta1
kind: PackageManifest
metadata:
  name: ` + art + `.v` + version + `
spec:
  type: bundle
  artifact: ` + bundleRef + `
  version: v` + version + `
  arch: [linux/amd64]
  info:
    displayName: Tiny
  relatedImages:
  - ` + e.src.Ref("tiny/manager:v1.0.0") + `
`
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func mustRef(t *testing.T, s string) name.Reference {
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestBadInput: each broken input gets a message naming the file, image or
// host and what to do, the documented exit code, and no catalog commit.
func TestBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	e := tinyEnv(t)
	if out, errOut, code := e.publish(); code != 0 {
		t.Fatalf("first run: exit %d\n%s\n%s", code, out, errOut)
	}
	commitsBefore, _ := e.catalog()

	check := func(name string, wantCode int, wants []string, extra ...string) {
		t.Helper()
		out, errOut, code := e.publish(extra...)
		t.Logf("%s: exit %d\n%s", name, code, errOut)
		if code != wantCode {
			t.Errorf("%s: exit %d, want %d\n%s\n%s", name, code, wantCode, out, errOut)
		}
		for _, w := range wants {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", name, w, errOut)
			}
		}
		if c, _ := e.catalog(); len(c) != len(commitsBefore) {
			t.Errorf("%s: the catalog got a commit", name)
		}
	}

	// A manifest that does not parse: exit 1, file:line.
	p := filepath.Join(e.source, "packages", "tiny", "1.0.0", "manifest.yaml")
	good, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(good), "arch:", "archs:", 1)), 0o644)
	check("bad manifest", 1, []string{"packages/tiny/1.0.0/manifest.yaml:9: unknown field archs"})
	os.WriteFile(p, good, 0o644)

	// A bundle image that is missing: exit 1, names the manifest and image.
	q := e.writeManifest("tiny", "1.1.0", e.src.Ref("tiny/bundle:v1.1.0"))
	check("missing bundle", 1, []string{"packages/tiny/1.1.0/manifest.yaml:7", "bundle image " + e.src.Ref("tiny/bundle:v1.1.0") + " not found"})

	// A bundle image without a CSV: exit 1.
	ri, _ := random.Image(64, 1)
	remote.Write(mustRef(t, e.src.Ref("tiny/bundle:v1.1.0")), ri, e.src.Options()...)
	check("no CSV", 1, []string{"packages/tiny/1.1.0/manifest.yaml:7", "not a valid registry+v1 bundle"})
	os.RemoveAll(filepath.Dir(q))

	// A related image that does not exist: exit 1, names the manifest line.
	os.WriteFile(p, []byte(strings.Replace(string(good), "tiny/manager:v1.0.0", "tiny/manager:v9", 1)), 0o644)
	check("missing related image", 1, []string{"tiny/manager:v9", "not found", "packages/tiny/1.0.0/manifest.yaml:13 (spec.relatedImages)"})
	os.WriteFile(p, good, 0o644)

	// A wrong destination password: exit 2, names the host, once.
	check("destination 401", 2, []string{e.dst.Host, "401", "--dst-username/--dst-password"}, "--dst-password", "wrong")
	// An unreachable destination registry: exit 2.
	check("destination unreachable", 2, []string{"127.0.0.1:1", "cannot reach registry"}, "--dst-registry", "127.0.0.1:1")
	// A registry whose certificate is not trusted: exit 2, says --ca-file.
	check("untrusted TLS", 2, []string{"--ca-file"}, "--ca-file", e.src.CAFile)
	// A wrong source password: exit 2.
	check("source 401", 2, []string{e.src.Host, "401"}, "--src-password", "wrong")
	// An unreachable catalog repo: exit 2.
	check("catalog unreachable", 2, []string{"catalog repo", "clone failed"}, "--catalog", "http://127.0.0.1:1/catalog.git")
	// A wrong catalog password: exit 2, says which flag.
	check("catalog 401", 2, []string{"--catalog-password"}, "--catalog-password", "wrong")
	// A missing cluster overlay: exit 1.
	check("missing overlay", 1, []string{"kustomize/clusters/nowhere"}, "--cluster", "nowhere")
}
