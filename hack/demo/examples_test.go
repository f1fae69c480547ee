package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
)

// examplesDir is examples/operators seen from this package's directory, where
// `go test` runs.
const examplesDir = "../../examples/operators"

// exampleDirs returns every example bundle directory, failing the test when
// there is none.
func exampleDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := findBundles(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatalf("no bundles found under %s", examplesDir)
	}
	return dirs
}

// TestExampleBundlesValid loads every example bundle the way OLM tooling does
// and runs the default bundle validators of operator-framework/api on the
// bundle, its CSV and its CRDs. Errors fail the test; warnings are logged.
func TestExampleBundlesValid(t *testing.T) {
	for _, dir := range exampleDirs(t) {
		rel, _ := filepath.Rel(examplesDir, dir)
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			b, err := manifests.GetBundleFromDir(dir)
			if err != nil {
				t.Fatalf("load bundle: %v", err)
			}
			if b.CSV == nil {
				t.Fatal("bundle has no CSV")
			}
			objs := []interface{}{b, b.CSV}
			for _, crd := range b.V1CRDs {
				objs = append(objs, crd)
			}
			for _, crd := range b.V1beta1CRDs {
				objs = append(objs, crd)
			}
			for _, res := range validation.DefaultBundleValidators.Validate(objs...) {
				for _, w := range res.Warnings {
					t.Logf("warning: %s: %v", res.Name, w)
				}
				for _, e := range res.Errors {
					t.Errorf("error: %s: %v", res.Name, e)
				}
			}
		})
	}
}

// TestExampleBundlesConsistent checks what the validators do not but the
// demo and the README rely on: names follow the directories, the CRDs are
// apiextensions.k8s.io/v1, every image the CSV deploys is listed in
// spec.relatedImages (what a disconnected install needs), the Alauda
// provider annotations of hello-operator, and its replaces chain.
func TestExampleBundlesConsistent(t *testing.T) {
	replaces := map[string]string{} // CSV name -> replaces, for hello-operator
	for _, dir := range exampleDirs(t) {
		pkg, version := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
		t.Run(pkg+"/"+version, func(t *testing.T) {
			b, err := manifests.GetBundleFromDir(dir)
			if err != nil {
				t.Fatalf("load bundle: %v", err)
			}
			csv := b.CSV
			want := fmt.Sprintf("%s.v%s", pkg, version)
			if csv.Name != want {
				t.Errorf("CSV metadata.name = %q, want %q", csv.Name, want)
			}
			if got := csv.Spec.Version.String(); got != version {
				t.Errorf("CSV spec.version = %q, want %q (the directory name)", got, version)
			}
			if b.Package != pkg {
				t.Errorf("package annotation = %q, want %q (the directory name)", b.Package, pkg)
			}
			if base := filepath.Base(mustCSVPath(t, dir)); base != want+".clusterserviceversion.yaml" {
				t.Errorf("CSV file name %s, want %s.clusterserviceversion.yaml", base, want)
			}
			if len(b.V1CRDs) == 0 || len(b.V1beta1CRDs) > 0 {
				t.Errorf("want only apiextensions.k8s.io/v1 CRDs, got %d v1 and %d v1beta1", len(b.V1CRDs), len(b.V1beta1CRDs))
			}
			if len(csv.Spec.Icon) != 1 || csv.Spec.Icon[0].MediaType != "image/svg+xml" || csv.Spec.Icon[0].Data == "" {
				t.Errorf("want one image/svg+xml icon, got %+v", csv.Spec.Icon)
			}

			related := map[string]bool{}
			for _, ri := range csv.Spec.RelatedImages {
				related[ri.Image] = true
			}
			for _, img := range csvImages(csv) {
				if !related[img] {
					t.Errorf("image %s is deployed but not in spec.relatedImages", img)
				}
				if !strings.HasPrefix(img, "quay.io/example/") {
					t.Errorf("image %s: the examples use quay.io/example/ images", img)
				}
				if _, err := standInRef("127.0.0.1:5000", img); err != nil {
					t.Error(err)
				}
			}

			if pkg == "hello-operator" {
				wantAnn := map[string]string{
					"provider-type": "community",
					"provider":      `{"en":"Example Corp","zh":"示例公司"}`,
					"provider-url":  "https://example.com",
				}
				for k, v := range wantAnn {
					if got := csv.Annotations[k]; got != v {
						t.Errorf("annotation %s = %q, want %q", k, got, v)
					}
				}
				replaces[csv.Name] = csv.Spec.Replaces
			}
		})
	}
	wantChain := map[string]string{
		"hello-operator.v0.1.0": "",
		"hello-operator.v0.2.0": "hello-operator.v0.1.0",
		"hello-operator.v0.3.0": "hello-operator.v0.2.0",
	}
	for name, want := range wantChain {
		if got, ok := replaces[name]; !ok || got != want {
			t.Errorf("%s: replaces = %q (found: %v), want %q", name, got, ok, want)
		}
	}
}

func mustCSVPath(t *testing.T, dir string) string {
	t.Helper()
	_, p, err := readCSV(filepath.Join(dir, "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
