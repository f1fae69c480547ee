package olm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestBundleDependencies: the demo bundle (it owns the Widget CRD) with a
// required CRD in its CSV, olm.package and olm.gvk entries in
// metadata/dependencies.yaml and olm.package.required / olm.gvk
// properties in metadata/properties.yaml: each lands in its list, sorted,
// once.
func TestBundleDependencies(t *testing.T) {
	dir := t.TempDir()
	src := "../bundle/testdata/demo"
	for _, f := range []string{"manifests/demo-operator.clusterserviceversion.yaml", "manifests/demo.example.com_widgets.yaml", "metadata/annotations.yaml"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, "clusterserviceversion.yaml") {
			s := string(data)
			i := strings.Index(s, "\nspec:\n")
			if i < 0 {
				t.Fatal("demo CSV: no spec")
			}
			data = []byte(s[:i] + "\nspec:\n  customresourcedefinitions:\n    required:\n    - name: gadgets.other.example.com\n      version: v1\n      kind: Gadget\n" + s[i+len("\nspec:\n"):])
		}
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "metadata/dependencies.yaml"), []byte(`dependencies:
- type: olm.package
  value:
    packageName: store
    version: ">=1.0.0 <2.0.0"
- type: olm.gvk
  value:
    group: queue.example.com
    kind: Queue
    version: v1beta1
`), 0o644)
	os.WriteFile(filepath.Join(dir, "metadata/properties.yaml"), []byte(`properties:
- type: olm.package.required
  value:
    packageName: cache
    versionRange: 2.x
- type: olm.gvk
  value:
    group: extra.example.com
    kind: Extra
    version: v1
`), 0o644)
	b, err := bundle.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := BundleDependencies(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Dependencies{
		Provided: []property.GVK{{Group: "demo.example.com", Version: "v1", Kind: "Widget"}, {Group: "extra.example.com", Version: "v1", Kind: "Extra"}},
		GVKs:     []property.GVK{{Group: "other.example.com", Version: "v1", Kind: "Gadget"}, {Group: "queue.example.com", Version: "v1beta1", Kind: "Queue"}},
		Packages: []property.PackageRequired{{PackageName: "cache", VersionRange: "2.x"}, {PackageName: "store", VersionRange: ">=1.0.0 <2.0.0"}},
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("got  %+v\nwant %+v", d, want)
	}
	if _, err := BundleDependencies(&bundle.Bundle{}); err == nil {
		t.Error("a bundle without a CSV has dependencies")
	}
}

// TestBundleDependenciesCorpus: for every bundle of the corpus, the
// dependencies are those its catalog entry (BundleEntry, what opm render
// gives) carries as olm.gvk, olm.gvk.required and olm.package.required.
func TestBundleDependenciesCorpus(t *testing.T) {
	testenv.Short(t, "corpus test")
	gvks, pkgs := 0, 0
	for pkg, es := range corpusEntries(t) {
		for _, e := range es {
			d, derr := BundleDependencies(e.Bundle)
			entry, err := BundleEntry(pkg, e)
			if derr != nil {
				if err == nil {
					t.Errorf("%s: BundleDependencies: %v, while BundleEntry reads the bundle", e.Bundle.CSVName, derr)
				}
				continue
			}
			if err != nil {
				continue // BundleEntry's own refusals (no CSV version)
			}
			gvks, pkgs = gvks+len(d.GVKs), pkgs+len(d.Packages)
			var got Dependencies
			for _, p := range entry.Properties {
				switch p.Type {
				case property.TypeGVK:
					var g property.GVK
					json.Unmarshal(p.Value, &g)
					got.Provided = append(got.Provided, g)
				case property.TypeGVKRequired:
					var g property.GVK
					json.Unmarshal(p.Value, &g)
					got.GVKs = append(got.GVKs, g)
				case property.TypePackageRequired:
					var r property.PackageRequired
					json.Unmarshal(p.Value, &r)
					got.Packages = append(got.Packages, r)
				}
			}
			norm := func(d Dependencies) string {
				var parts []string
				for _, g := range d.Provided {
					parts = append(parts, "provides "+gvkKey(g))
				}
				for _, g := range d.GVKs {
					parts = append(parts, "requires "+gvkKey(g))
				}
				for _, r := range d.Packages {
					parts = append(parts, "requires package "+r.PackageName+" "+r.VersionRange)
				}
				sort.Strings(parts)
				return strings.Join(parts, "\n")
			}
			if a, b := norm(d), norm(got); a != b {
				t.Errorf("%s:\nBundleDependencies:\n%s\ncatalog entry:\n%s", e.Bundle.CSVName, a, b)
			}
		}
	}
	t.Logf("%d GVK and %d package requirements", gvks, pkgs)
}

func gvkKey(g property.GVK) string { return g.Group + "/" + g.Version + "/" + g.Kind }
