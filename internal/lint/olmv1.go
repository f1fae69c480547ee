package lint

import (
	"fmt"
	"sort"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/property"
	corev1 "k8s.io/api/core/v1"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/olm"
)

// olmv1Rules checks the bundle of f against what OLM v1 (operator-controller
// v1.11.0, docs/project/olmv1_limitations.md) can install, for the clusters
// that use it: the AllNamespaces install mode, no dependencies
// (olm.gvk.required, olm.package.required, olm.constraint, as the bundle's
// catalog entry would carry them), no OperatorConditions.
func (f *mfile) olmv1Rules(b *bundle.Bundle, clusters []string) []Finding {
	if len(clusters) == 0 || b.CSV == nil {
		return nil
	}
	var out []Finding
	on := "cluster " + strings.Join(clusters, ", ")
	if len(clusters) > 1 {
		on = "clusters " + strings.Join(clusters, ", ")
	}
	add := func(rule, msg string) {
		out = append(out, f.bundleFinding(rule, bundleManifestsPath, fmt.Sprintf("bundle %s: %s: OLM v1 (%s) cannot install it", b.CSVName, msg, on), ""))
	}
	csv := b.CSV

	allNamespaces := false
	var supported []string
	for _, m := range csv.Spec.InstallModes {
		if m.Supported {
			supported = append(supported, string(m.Type))
			allNamespaces = allNamespaces || m.Type == v1alpha1.InstallModeTypeAllNamespaces
		}
	}
	if !allNamespaces {
		what := "no install mode"
		if len(supported) > 0 {
			what = "only " + strings.Join(supported, ", ")
		}
		add(RuleOLMv1InstallMode, "the CSV does not support the AllNamespaces install mode ("+what+")")
	}

	// The catalog entry (opm render's properties) says which dependencies
	// the bundle declares, from the CSV's required CRDs and API services
	// and metadata/dependencies.yaml alike.
	if e, err := olm.BundleEntry(b.Package, olm.Entry{Bundle: b, Image: "lint.invalid/bundle"}); err == nil {
		found := map[string][]string{}
		for _, p := range e.Properties {
			switch p.Type {
			case property.TypeGVKRequired, property.TypePackageRequired, property.TypeConstraint:
				found[p.Type] = append(found[p.Type], string(p.Value))
			}
		}
		types := make([]string, 0, len(found))
		for t := range found {
			types = append(types, t)
		}
		sort.Strings(types)
		for _, t := range types {
			add(RuleOLMv1Dependency, fmt.Sprintf("it declares %s %s", t, strings.Join(found[t], ", ")))
		}
	}

	if uses := operatorConditions(csv); uses != "" {
		add(RuleOLMv1OperatorConditions, "it uses OperatorConditions ("+uses+")")
	}
	return out
}

// operatorConditions says how the CSV uses OLM v0's OperatorConditions API
// ("" when it does not): RBAC on operators.coreos.com operatorconditions,
// or a container reading OPERATOR_CONDITION_NAME, which OLM v0 sets.
func operatorConditions(csv *v1alpha1.ClusterServiceVersion) string {
	sd := csv.Spec.InstallStrategy.StrategySpec
	for _, perms := range [][]v1alpha1.StrategyDeploymentPermissions{sd.Permissions, sd.ClusterPermissions} {
		for _, p := range perms {
			for _, r := range p.Rules {
				group := false
				for _, g := range r.APIGroups {
					group = group || g == "operators.coreos.com" || g == "*"
				}
				for _, res := range r.Resources {
					if group && (res == "operatorconditions" || strings.HasPrefix(res, "operatorconditions/")) {
						return "service account " + p.ServiceAccountName + " is granted " + res
					}
				}
			}
		}
	}
	for _, d := range sd.DeploymentSpecs {
		for _, c := range append(append([]corev1.Container(nil), d.Spec.Template.Spec.Containers...), d.Spec.Template.Spec.InitContainers...) {
			for _, env := range c.Env {
				if env.Name == "OPERATOR_CONDITION_NAME" {
					return "deployment " + d.Name + " container " + c.Name + " reads OPERATOR_CONDITION_NAME"
				}
			}
		}
	}
	return ""
}
