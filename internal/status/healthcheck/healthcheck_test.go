package healthcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// healthTest is one entry of a health_test.yaml (Argo CD's layout, plus
// fluxStatus, the kstatus status the Flux healthCheckExprs give the same
// object, which test/e2e's TestFluxGit checks in the real
// kustomize-controller).
type healthTest struct {
	HealthStatus Result `json:"healthStatus"`
	FluxStatus   string `json:"fluxStatus"`
	InputPath    string `json:"inputPath"`
}

// TestScripts runs every script of the template's argocd-cm patch against
// every fixture of testdata/<group>/<kind>/health_test.yaml, as Argo CD's
// resource-customization tests do, and checks that every fixture file is
// used and every script has fixtures.
func TestScripts(t *testing.T) {
	scripts, err := Scripts()
	if err != nil {
		t.Fatal(err)
	}
	for gk, script := range scripts {
		group, kind, _ := strings.Cut(gk, "_")
		dir := filepath.Join("testdata", group, kind)
		data, err := os.ReadFile(filepath.Join(dir, "health_test.yaml"))
		if err != nil {
			t.Errorf("script %s has no tests: %v", gk, err)
			continue
		}
		if strings.Contains(script, "string.") || strings.Contains(script, "os.") || strings.Contains(script, ":find(") {
			t.Errorf("script %s uses a library Argo CD does not open (string, os)", gk)
		}
		var tests struct{ Tests []healthTest }
		if err := yaml.Unmarshal(data, &tests); err != nil {
			t.Fatal(err)
		}
		used := map[string]bool{}
		for _, tc := range tests.Tests {
			used[filepath.Base(tc.InputPath)] = true
			t.Run(kind+"/"+strings.TrimSuffix(filepath.Base(tc.InputPath), ".yaml"), func(t *testing.T) {
				raw, err := os.ReadFile(filepath.Join(dir, tc.InputPath))
				if err != nil {
					t.Fatal(err)
				}
				var obj map[string]any
				if err := yaml.Unmarshal(raw, &obj); err != nil {
					t.Fatal(err)
				}
				got, err := Run(script, obj)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.HealthStatus {
					t.Errorf("got %+v\nwant %+v", got, tc.HealthStatus)
				}
			})
		}
		files, _ := os.ReadDir(filepath.Join(dir, "testdata"))
		for _, f := range files {
			if !used[f.Name()] {
				t.Errorf("%s/testdata/%s is in no test", dir, f.Name())
			}
		}
	}
	if len(scripts) != 2 {
		t.Errorf("scripts for %d kinds, want Artifact and ArtifactVersion", len(scripts))
	}
}

// TestChecker: an object of a kind without a script is not evaluated; the
// integers of a typed decode (int64) read as numbers.
func TestChecker(t *testing.T) {
	c, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	if _, ok, _ := c.Health(cm); ok {
		t.Error("a ConfigMap was evaluated")
	}
	art := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "app.alauda.io/v1alpha1", "kind": "Artifact",
		"spec":   map[string]any{"present": true},
		"status": map[string]any{"synced": true, "availableArtifactVersion": int64(3)},
	}}
	r, ok, err := c.Health(art)
	if err != nil || !ok || r.Status != Healthy || r.Message != "3 versions available" {
		t.Errorf("%+v %v %v", r, ok, err)
	}
}

// TestRunErrors: a script that does not return a table, or returns an
// unknown status, is reported as Argo CD does.
func TestRunErrors(t *testing.T) {
	if _, err := Run(`return "x"`, nil); err == nil {
		t.Error("a string return was accepted")
	}
	r, err := Run(`return {status = "Fine"}`, nil)
	if err != nil || r.Status != Unknown {
		t.Errorf("%+v %v", r, err)
	}
	if _, err := Run(`return string.upper("x")`, nil); err == nil {
		t.Error("the string library is open; Argo CD does not open it")
	}
}
