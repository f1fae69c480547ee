package fluxcel

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/runtime/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The files under test, relative to this directory.
const (
	kustomizationFile = "../../catalog-repo-template/flux/kustomization.yaml"
	fixtures          = "../../internal/status/healthcheck/testdata/app.alauda.io"
)

// TestHealthCheckExprs reads the healthCheckExprs of the template's Flux
// Kustomization, builds Flux's evaluator for each kind as
// kustomize-controller does, and evaluates every fixture of
// ../../internal/status/healthcheck/testdata/app.alauda.io/<Kind>/health_test.yaml:
// the kstatus status must be the fixture's fluxStatus. An object without
// any status is the one exception: the expressions name `status`, which
// is then unbound, so Flux's evaluator returns an error, which
// kustomize-controller reports as an Unknown status and keeps waiting on,
// as for InProgress (docs/after-sync.md).
func TestHealthCheckExprs(t *testing.T) {
	data, err := os.ReadFile(kustomizationFile)
	if err != nil {
		t.Fatal(err)
	}
	var ks struct {
		Spec struct {
			Wait             bool                          `json:"wait"`
			HealthChecks     []any                         `json:"healthChecks"`
			HealthCheckExprs []kustomize.CustomHealthCheck `json:"healthCheckExprs"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &ks); err != nil {
		t.Fatal(err)
	}
	if !ks.Spec.Wait && len(ks.Spec.HealthChecks) == 0 {
		t.Errorf("%s: neither wait nor healthChecks is set: Flux would not evaluate the healthCheckExprs", kustomizationFile)
	}
	// All of them at once, as kustomize-controller builds its status readers.
	if _, err := cel.NewStatusReader(ks.Spec.HealthCheckExprs); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, hc := range ks.Spec.HealthCheckExprs {
		kinds[hc.Kind] = true
		if hc.APIVersion != "app.alauda.io/v1alpha1" {
			t.Errorf("%s: apiVersion %s", hc.Kind, hc.APIVersion)
		}
		ev, err := cel.NewStatusEvaluator(&hc.HealthCheckExpressions)
		if err != nil {
			t.Fatalf("%s: %v", hc.Kind, err)
		}
		dir := filepath.Join(fixtures, hc.Kind)
		raw, err := os.ReadFile(filepath.Join(dir, "health_test.yaml"))
		if err != nil {
			t.Fatalf("%s: no fixtures: %v", hc.Kind, err)
		}
		var tests struct {
			Tests []struct {
				FluxStatus string `json:"fluxStatus"`
				InputPath  string `json:"inputPath"`
			} `json:"tests"`
		}
		if err := yaml.Unmarshal(raw, &tests); err != nil {
			t.Fatal(err)
		}
		for _, tc := range tests.Tests {
			name := strings.TrimSuffix(filepath.Base(tc.InputPath), ".yaml")
			t.Run(hc.Kind+"/"+name, func(t *testing.T) {
				objData, err := os.ReadFile(filepath.Join(dir, tc.InputPath))
				if err != nil {
					t.Fatal(err)
				}
				var obj map[string]any
				if err := yaml.Unmarshal(objData, &obj); err != nil {
					t.Fatal(err)
				}
				res, err := ev.Evaluate(context.Background(), &unstructured.Unstructured{Object: obj})
				if _, hasStatus := obj["status"]; !hasStatus {
					if err == nil || !strings.Contains(err.Error(), "status") {
						t.Errorf("no status: got %v, %v; want the evaluation error naming status", res, err)
					}
					if tc.FluxStatus != "InProgress" {
						t.Errorf("fixture without status expects %s; Flux keeps waiting on it (InProgress)", tc.FluxStatus)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if string(res.Status) != tc.FluxStatus {
					t.Errorf("Flux status %s, want %s", res.Status, tc.FluxStatus)
				}
			})
		}
	}
	if !kinds["Artifact"] || !kinds["ArtifactVersion"] {
		t.Errorf("healthCheckExprs for %v, want Artifact and ArtifactVersion", kinds)
	}
}
