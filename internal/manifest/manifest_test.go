package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const good = `apiVersion: app.alauda.cn/v1beta1
kind: PackageManifest
metadata:
  name: etcd.v0.9.4
spec:
  type: bundle
  artifact: registry.example.com/ops/etcd-bundle:v0.9.4
  version: v0.9.4
  arch: [linux/amd64]
  info:
    displayName: etcd
    links:
    - name: Docs
      url: https://etcd.io
  relatedImages:
  - quay.io/coreos/etcd-operator:v0.9.4
`

func TestParseGood(t *testing.T) {
	m, err := Parse("p/manifest.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if m.Artifact != "etcd" || m.Version.String() != "0.9.4" || m.Tag() != "v0.9.4" {
		t.Errorf("got artifact %q version %s tag %s", m.Artifact, m.Version, m.Tag())
	}
	if m.Lines["spec.artifact"] != 7 || m.Lines["spec.relatedImages.0"] != 16 {
		t.Errorf("lines: %v", m.Lines)
	}
	byDigest := strings.Replace(good, ":v0.9.4\n  version", "@sha256:"+strings.Repeat("a", 64)+"\n  version", 1)
	if m, err := Parse("x", []byte(byDigest)); err != nil || m.Tag() != "v0.9.4" {
		t.Errorf("digest-only artifact: tag %v err %v", m, err)
	}
	withPort := strings.Replace(good, "registry.example.com/", "registry.example.com:5000/", 1)
	if m, err := Parse("x", []byte(withPort)); err != nil || m.Tag() != "v0.9.4" {
		t.Errorf("registry with port: %v", err)
	}
	noV := strings.Replace(good, "version: v0.9.4", "version: 0.9.4", 1)
	if _, err := Parse("x", []byte(noV)); err != nil {
		t.Errorf("version without v: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, edit, with, want string
	}{
		{"unknown field", "  arch:", "  archs:", "p/manifest.yaml:9: unknown field archs"},
		{"wrong type", "  arch: [linux/amd64]", "  arch: linux/amd64", "p/manifest.yaml:9: spec.arch: cannot construct"},
		{"missing artifact", "  artifact: registry.example.com/ops/etcd-bundle:v0.9.4\n", "", "p/manifest.yaml:5: spec.artifact field cannot be empty"},
		{"bad version", "version: v0.9.4", "version: latest", "p/manifest.yaml:8: spec.version \"latest\" is not a semantic version"},
		{"name mismatch", "name: etcd.v0.9.4", "name: etcd", "p/manifest.yaml:4: metadata.name \"etcd\" must be <artifact>.v0.9.4"},
		{"kind", "kind: PackageManifest", "kind: Other", "p/manifest.yaml:1: apiVersion/kind"},
		{"unknown type", "type: bundle", "type: plugin", "p/manifest.yaml:6: spec.type \"plugin\" is not valid: use bundle or chart"},
		{"chart name on a bundle", "  version: v0.9.4", "  chart: etcd\n  version: v0.9.4", "p/manifest.yaml:8: spec.chart is for spec.type chart"},
		{"bad ref", "quay.io/coreos/etcd-operator:v0.9.4", "quay.io/Coreos/etcd-operator:v0.9.4", "p/manifest.yaml:16: spec.relatedImages[0]"},
		{"dot-dot in a related image", "quay.io/coreos/etcd-operator:v0.9.4", "quay.io/coreos/../other/etcd-operator:v0.9.4", `p/manifest.yaml:16: spec.relatedImages[0] "quay.io/coreos/../other/etcd-operator:v0.9.4" is not a valid image reference with a tag or digest: repository "coreos/../other/etcd-operator" has a ".." path component`},
		{"dot-dot in the artifact", "registry.example.com/ops/etcd-bundle:v0.9.4", "registry.example.com/ops/../x/etcd-bundle:v0.9.4", `p/manifest.yaml:7: spec.artifact "registry.example.com/ops/../x/etcd-bundle:v0.9.4" is not a valid image reference`},
		{"two docs", "", "---\nkind: x\n", "more than one YAML document"},
		{"bad yaml", "  info:\n", "  info: [\n", "p/manifest.yaml:"},
		{"uppercase artifact", "name: etcd.v0.9.4", "name: Etcd.v0.9.4", "artifact name \"Etcd\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := good
			if tc.edit == "" {
				in += tc.with
			} else {
				in = strings.Replace(good, tc.edit, tc.with, 1)
			}
			_, err := Parse("p/manifest.yaml", []byte(in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := Parse("e.yaml", nil); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty file: %v", err)
	}
}

func TestScan(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte(s), 0o644)
	}
	write("packages/etcd/0.9.4/manifest.yaml", good)
	write("packages/etcd/0.9.2/manifest.yaml", strings.ReplaceAll(good, "0.9.4", "0.9.2"))
	write("packages/other/manifest.yaml", "apiVersion: v1\nkind: ConfigMap\n")
	write("packages/broken/1.0.0/manifest.yaml", strings.Replace(good, "arch:", "arc:", 1))
	write("packages/etcd/README.md", "not a manifest")
	write("packages/typo/1.0.0/manifest.yml", good)
	write("packages/kindcase/1.0.0/manifest.yaml", strings.Replace(strings.ReplaceAll(good, "0.9.4", "1.0.0"), "kind: PackageManifest", "kind: packagemanifest", 1))
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("root:TOKEN\n"), 0o600)
	os.MkdirAll(filepath.Join(root, "packages/leak/1.0.0"), 0o755)
	os.Symlink(secret, filepath.Join(root, "packages/leak/1.0.0/manifest.yaml"))
	os.Symlink(t.TempDir(), filepath.Join(root, "packages/linked"))
	ms, err := Scan(root, filepath.Join(root, "packages"))
	if len(ms) != 2 || ms[0].Version.String() != "0.9.2" || ms[0].Path != "packages/etcd/0.9.2/manifest.yaml" {
		t.Fatalf("scan: %d manifests %+v", len(ms), ms)
	}
	if err == nil || !strings.Contains(err.Error(), "packages/broken/1.0.0/manifest.yaml:9: unknown field arc") {
		t.Errorf("scan error: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "TOKEN") {
		t.Errorf("a symlinked file was read: %v", err)
	}
	files, _ := ReadFiles(root, filepath.Join(root, "packages"))
	for _, f := range files {
		if strings.Contains(f.Path, "leak") {
			t.Errorf("ReadFiles read a symlink: %s", f.Path)
		}
	}
	for _, want := range []string{"packages/leak/1.0.0/manifest.yaml: a symbolic link", "packages/linked: a symbolic link", "packages/typo/1.0.0/manifest.yml: only files named exactly manifest.yaml", "packages/kindcase/1.0.0/manifest.yaml:1: apiVersion/kind"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("scan error lacks %q: %v", want, err)
		}
	}
	if _, err := Scan(root, filepath.Join(root, "nope")); err == nil || !strings.Contains(err.Error(), "--packages-dir") {
		t.Errorf("missing root: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("kind: PackageManifest\nspec: {arch: 3}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("f.yaml", data)
		if err == nil && (m.Artifact == "" || m.Spec.Artifact == "") {
			t.Fatal("parsed without artifact")
		}
	})
}
