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

	"github.com/operator-publish/publish/internal/testenv"
)

// tinyEnv is a world with one operator, tiny 1.0.0, in the source
// registry and the package repo.
func tinyEnv(t *testing.T) *env {
	e := newEnv(t)
	e.pushTiny("1.0.0")
	e.writeManifest("tiny", "1.0.0", e.src.Ref("tiny/bundle:v1.0.0"))
	e.commit("add tiny")
	return e
}

// pushTiny pushes the tiny bundle of version v and its two images.
func (e *env) pushTiny(v string) {
	t := e.t
	for _, img := range []string{"tiny/manager:v" + v, "tiny/worker:v" + v} {
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
		s := strings.ReplaceAll(strings.ReplaceAll(string(data), "REGISTRY", e.src.Host), "1.0.0", v)
		os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755)
		return os.WriteFile(filepath.Join(dir, rel), []byte(s), 0o644)
	})
	img, err := bundle.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, e.src.Ref("tiny/bundle:v"+v)), img, e.src.Options()...); err != nil {
		t.Fatal(err)
	}
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
  - ` + e.src.Ref("tiny/manager:v"+version) + `
  - ` + e.src.Ref("tiny/worker:v"+version) + `
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
	testenv.Short(t, "integration test")
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

	// Each case commits its change, as a merge would: change detection
	// compares commits.
	p := filepath.Join(e.source, "packages", "tiny", "1.0.0", "manifest.yaml")
	good, _ := os.ReadFile(p)
	restore := func() { os.WriteFile(p, good, 0o644); e.commit("restore") }

	// A manifest that does not parse: exit 1, file:line:column, rule.
	os.WriteFile(p, []byte(strings.Replace(string(good), "arch:", "archs:", 1)), 0o644)
	e.commit("typo")
	check("bad manifest", 1, []string{"packages/tiny/1.0.0/manifest.yaml:9:3: error: unknown field spec.archs", "[manifest/unknown-field]", "lint failed"})
	restore()

	// A bundle image that is missing: exit 1, names the manifest and image.
	q := e.writeManifest("tiny", "1.1.0", e.src.Ref("tiny/bundle:v1.1.0"))
	e.commit("tiny 1.1.0, not pushed")
	check("missing bundle", 1, []string{"packages/tiny/1.1.0/manifest.yaml:7", "bundle image " + e.src.Ref("tiny/bundle:v1.1.0") + " not found"})

	// A bundle image without a CSV: exit 1.
	ri, _ := random.Image(64, 1)
	remote.Write(mustRef(t, e.src.Ref("tiny/bundle:v1.1.0")), ri, e.src.Options()...)
	check("no CSV", 1, []string{"packages/tiny/1.1.0/manifest.yaml:7", "not a valid registry+v1 bundle"})

	// From here on tiny 1.1.0 is valid: every run has work to do.
	e.pushTiny("1.1.0")
	os.WriteFile(q, []byte(strings.Replace(mustRead(t, q), "  relatedImages:\n", "  relatedImages:\n  - "+e.src.Ref("tiny/extra:v9")+"\n", 1)), 0o644)
	e.commit("tiny 1.1.0 with an extra image that does not exist")
	// A related image that does not exist: exit 1, names the manifest line.
	check("missing related image", 1, []string{"tiny/extra:v9", "not found", "packages/tiny/1.1.0/manifest.yaml:13 (spec.relatedImages)"})
	e.writeManifest("tiny", "1.1.0", e.src.Ref("tiny/bundle:v1.1.0"))
	e.commit("tiny 1.1.0")

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

	// And with everything right, the upgrade goes through.
	if out, errOut, code := e.publish(); code != 0 || !strings.Contains(out, "upgraded  tiny 1.1.0") {
		t.Fatalf("final run: exit %d\n%s\n%s", code, out, errOut)
	}
}

func mustRead(t *testing.T, p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
