package bundle_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/testenv"
)

// sameAsOperatorFramework fails unless bundle.LoadManifests gives for dir
// what operator-framework/api's GetBundleFromDir gives: the same Bundle
// (every object, typed CSV and CRDs, channels, package, sizes) or the same
// error text.
func sameAsOperatorFramework(t *testing.T, dir string) {
	t.Helper()
	want, wantErr := manifests.GetBundleFromDir(dir)
	got, gotErr := bundle.LoadManifests(dir)
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Fatalf("%s: error %v, operator-framework's %v", dir, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: the bundle differs from operator-framework's", dir)
	}
}

// TestLoadManifestsEqual: every bundle of the corpus loads as
// operator-framework/api loads it.
func TestLoadManifestsEqual(t *testing.T) {
	shared := testenv.RequireShared(t)
	dirs, _ := filepath.Glob(filepath.Join(shared, "corpus", "community-operators", "*", "*", "manifests"))
	if len(dirs) < 40 {
		t.Fatalf("%d bundles in the corpus", len(dirs))
	}
	slow := 0
	for _, m := range dirs {
		sameAsOperatorFramework(t, filepath.Dir(m))
		if !bundle.LoadsFast(filepath.Dir(m)) {
			slow++
			t.Logf("%s: operator-framework's loader", filepath.Dir(m))
		}
	}
	if slow > len(dirs)/10 {
		t.Errorf("%d of %d corpus bundles not read the fast way", slow, len(dirs))
	}
	sameAsOperatorFramework(t, demoDir)
}

// TestLoadManifestsEdges: the files the fast way leaves to
// operator-framework/api load as there, broken bundles fail with its
// message.
func TestLoadManifestsEdges(t *testing.T) {
	csv, err := os.ReadFile(filepath.Join(demoDir, "manifests", "demo-operator.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions: [{name: v1, served: true, storage: true}]\n"
	cases := map[string]map[string]string{
		// sigs.k8s.io/yaml writes a number as text where the type wants text.
		"number as text":    {"manifests/demo-operator.clusterserviceversion.yaml": strings.Replace(string(csv), "metadata:\n", "metadata:\n  labels: {tier: 2}\n", 1)},
		"several documents": {"manifests/crd.yaml": crd + "---\n" + crd},
		"json":              {"manifests/crd.json": `{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.example.com"}}`},
		"hidden file":       {"manifests/.hidden": "x: 1\n"},
		"empty file":        {"manifests/empty.yaml": ""},
		"two CSVs":          {"manifests/second.yaml": string(csv)},
		"no kind":           {"manifests/nokind.yaml": "a: 1\n"},
		"bad CRD version":   {"manifests/crd.yaml": strings.Replace(crd, "apiextensions.k8s.io/v1", "apiextensions.k8s.io/v2", 1)},
		"not YAML":          {"metadata/README.md": "# a: b: c\n\t- x\n"},
		"no CSV":            {"manifests/demo-operator.clusterserviceversion.yaml": crd},
		"leading separator": {"manifests/crd.yaml": "---\n" + crd},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
				t.Fatal(err)
			}
			for p, data := range files {
				if err := os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sameAsOperatorFramework(t, dir)
		})
	}
}
