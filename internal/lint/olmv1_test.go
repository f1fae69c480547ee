package lint

import (
	"context"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/operator-publish/publish/internal/testenv"
)

// TestOLMv1Rules lints the corpus for a cluster that uses OLM v1: bundles
// without AllNamespaces, with dependencies, get warnings naming the bundle
// and the cluster; the same corpus without an OLM v1 cluster gets none.
func TestOLMv1Rules(t *testing.T) {
	testenv.Short(t, "corpus test")
	in, _ := corpusInput(t)
	count := func(cfg Config, in Input) map[string][]Finding {
		out := map[string][]Finding{}
		for _, f := range Run(context.Background(), cfg, in) {
			if strings.HasPrefix(f.Rule, "olmv1/") {
				out[f.Rule] = append(out[f.Rule], f)
			}
		}
		return out
	}
	got := count(Config{OLMv1Clusters: []string{"edge"}}, in)
	// The same manifests without an OLM v1 cluster (those with findings:
	// linting the whole corpus twice costs minutes under -race).
	some := Input{Bundles: in.Bundles, BundleErrors: in.BundleErrors}
	for _, f := range in.Files {
		for _, x := range got[RuleOLMv1InstallMode] {
			if x.Path == f.Path {
				some.Files = append(some.Files, f)
				break
			}
		}
	}
	if none := count(Config{}, some); len(none) != 0 {
		t.Fatalf("olmv1 findings without an OLM v1 cluster: %v", none)
	}
	for _, rule := range []string{RuleOLMv1InstallMode, RuleOLMv1Dependency} {
		if len(got[rule]) == 0 {
			t.Errorf("no %s finding in the corpus", rule)
		}
	}
	for _, p := range in.Files {
		b := in.Bundles[p.Path]
		if b == nil || b.CSV == nil {
			continue
		}
		all := false
		for _, m := range b.CSV.Spec.InstallModes {
			all = all || (m.Type == v1alpha1.InstallModeTypeAllNamespaces && m.Supported)
		}
		found := false
		for _, f := range got[RuleOLMv1InstallMode] {
			if f.Path == p.Path {
				found = true
				if f.Severity != Warning || !strings.Contains(f.Message, "bundle "+b.CSVName+":") || !strings.Contains(f.Message, "OLM v1 (cluster edge)") {
					t.Errorf("%s: %s %s", p.Path, f.Severity, f.Message)
				}
			}
		}
		if found == all {
			t.Errorf("%s: AllNamespaces supported %v, install-mode finding %v", p.Path, all, found)
		}
		required := len(b.CSV.Spec.CustomResourceDefinitions.Required) + len(b.CSV.Spec.APIServiceDefinitions.Required)
		dep := false
		for _, f := range got[RuleOLMv1Dependency] {
			dep = dep || f.Path == p.Path
		}
		if required > 0 && !dep {
			t.Errorf("%s: %d required APIs and no olmv1/dependency finding", p.Path, required)
		}
	}
	t.Logf("olmv1 findings: %d install-mode, %d dependency, %d operator-conditions", len(got[RuleOLMv1InstallMode]), len(got[RuleOLMv1Dependency]), len(got[RuleOLMv1OperatorConditions]))
}

// TestOperatorConditions: RBAC on operatorconditions or a container
// reading OPERATOR_CONDITION_NAME is a use of OperatorConditions.
func TestOperatorConditions(t *testing.T) {
	csv := &v1alpha1.ClusterServiceVersion{}
	if got := operatorConditions(csv); got != "" {
		t.Errorf("empty CSV: %q", got)
	}
	csv.Spec.InstallStrategy.StrategySpec.Permissions = []v1alpha1.StrategyDeploymentPermissions{{
		ServiceAccountName: "op",
		Rules:              []rbacv1.PolicyRule{{APIGroups: []string{"operators.coreos.com"}, Resources: []string{"operatorconditions"}, Verbs: []string{"get"}}},
	}}
	if got := operatorConditions(csv); !strings.Contains(got, "service account op") {
		t.Errorf("RBAC on operatorconditions: %q", got)
	}
}
