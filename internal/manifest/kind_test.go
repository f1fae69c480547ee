package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A manifest.yaml whose kind is a misspelling of PackageManifest, or whose
// apiVersion is ours, is a manifest with an error, not another kind of
// file skipped (its version would be delisted without a word).
func TestMisspeltKindIsAnError(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte(s), 0o644)
	}
	write("packages/etcd/0.9.4/manifest.yaml", good)
	write("packages/etcd/0.9.5/manifest.yaml", strings.Replace(strings.ReplaceAll(good, "0.9.4", "0.9.5"), "kind: PackageManifest", "kind: PackageManfest", 1))
	write("packages/etcd/0.9.6/manifest.yaml", strings.Replace(strings.ReplaceAll(good, "0.9.4", "0.9.6"), "kind: PackageManifest", "kind: \"PakageManifests\"", 1))
	write("packages/etcd/0.9.7/manifest.yaml", strings.Replace(strings.ReplaceAll(good, "0.9.4", "0.9.7"), "kind: PackageManifest", "kind: Manifest", 1))
	write("packages/other/manifest.yaml", "apiVersion: v1\nkind: ConfigMap\n")
	ms, err := Scan(root, filepath.Join(root, "packages"))
	if len(ms) != 1 {
		t.Errorf("%d manifests, want 1", len(ms))
	}
	for _, v := range []string{"0.9.5", "0.9.6", "0.9.7"} {
		if err == nil || !strings.Contains(err.Error(), "packages/etcd/"+v+"/manifest.yaml:") {
			t.Errorf("the misspelt kind of %s is no error: %v", v, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "packages/other") {
		t.Errorf("another kind of file is reported: %v", err)
	}
}
