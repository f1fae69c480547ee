package olm

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/bundle"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Installer RBAC (publish.yaml clusters.<cluster>.olm.clusterExtensions[].installerRBAC):
// what the service account of a ClusterExtension is granted, for
// operator-controller releases before v1.11 that install with it.
const (
	// InstallerRBACBundle (the default, "") grants the rules derived from
	// the package's bundles (Installer), as operator-controller's "Derive
	// minimal ServiceAccount required for ClusterExtension Installation
	// and Management" describes.
	InstallerRBACBundle = "bundle"
	// InstallerRBACClusterAdmin binds cluster-admin, as that page's
	// alternative for test clusters does.
	InstallerRBACClusterAdmin = "cluster-admin"
)

// InstallerRules are the RBAC rules the installer service account of a
// ClusterExtension needs for a bundle: Cluster for its ClusterRole,
// Namespace for its Role in the install namespace. The JSON form is kept
// in NotesFile, so that an unchanged bundle's rules come from the last
// catalog image.
type InstallerRules struct {
	Cluster   []rbacv1.PolicyRule `json:"cluster,omitempty"`
	Namespace []rbacv1.PolicyRule `json:"namespace,omitempty"`
}

// Verbs of the derived rules: what cannot be scoped to resource names
// (create, list, watch) is granted on the resource, the rest on the
// bundle's object names only.
var (
	anyVerbs   = []string{"create", "list", "watch"}
	namedVerbs = []string{"get", "update", "patch", "delete"}
)

// clusterScoped are the cluster-scoped kinds a registry+v1 bundle may
// ship beside its CSV and CRDs (OLM's supported bundle objects), by kind,
// with their API resource; any other kind is taken as namespaced.
var clusterScoped = map[string]string{
	"ClusterRole":        "clusterroles",
	"ClusterRoleBinding": "clusterrolebindings",
	"PriorityClass":      "priorityclasses",
	"ConsoleYAMLSample":  "consoleyamlsamples",
	"ConsoleQuickStart":  "consolequickstarts",
	"ConsoleCLIDownload": "consoleclidownloads",
	"ConsoleLink":        "consolelinks",
}

// namespaced are the API resources of the namespaced kinds OLM supports
// in a bundle; another kind's resource is its lowercase plural.
var namespaced = map[string]string{
	"Secret": "secrets", "ConfigMap": "configmaps", "ServiceAccount": "serviceaccounts", "Service": "services",
	"Role": "roles", "RoleBinding": "rolebindings", "PrometheusRule": "prometheusrules", "ServiceMonitor": "servicemonitors",
	"PodDisruptionBudget": "poddisruptionbudgets", "VerticalPodAutoscaler": "verticalpodautoscalers", "NetworkPolicy": "networkpolicies",
}

// Installer derives the installer rules of bundle b (its CSV and, when
// loaded, its other manifests), following operator-controller's "Derive
// minimal ServiceAccount" page (docs/olm.md, "The installer service
// account"):
//
//   - the bundle's CRDs: create, list, watch, and get, update, patch,
//     delete by name;
//   - ClusterRoles and ClusterRoleBindings: create, list, watch, get,
//     update, patch, delete, not scoped to names, because operator-controller
//     names the ones it generates from the CSV's permissions with a hash of
//     their rules and RBAC resourceNames take no wildcard;
//   - every rule of the CSV's clusterPermissions and permissions, and of
//     the ClusterRoles and Roles the bundle ships, because the installer
//     must hold what it grants (RBAC's escalation check; in the
//     AllNamespaces install mode, the only one operator-controller
//     supports, the CSV's permissions become ClusterRoles);
//   - the bundle's other cluster-scoped objects by kind and name;
//   - in the install namespace: the CSV's deployments, the service
//     accounts they and the permissions name, and the bundle's namespaced
//     objects, each by kind and name (create, list, watch on the kind).
//
// The ClusterExtension's own finalizer rule depends on its name and is
// added by ClusterExtension. Errors: b has no CSV.
func Installer(b *bundle.Bundle) (InstallerRules, error) {
	if b == nil || b.CSV == nil {
		return InstallerRules{}, fmt.Errorf("installer RBAC: the bundle has no CSV")
	}
	var r InstallerRules
	spec := b.CSV.Spec.InstallStrategy.StrategySpec
	var crds []string
	if b.Loaded != nil {
		for _, c := range b.Loaded.V1CRDs {
			crds = append(crds, c.Name)
		}
		for _, c := range b.Loaded.V1beta1CRDs {
			crds = append(crds, c.Name)
		}
	}
	if len(crds) == 0 {
		for _, c := range b.CSV.Spec.CustomResourceDefinitions.Owned {
			crds = append(crds, c.Name)
		}
	}
	r.Cluster = append(r.Cluster, byName("apiextensions.k8s.io", "customresourcedefinitions", crds)...)
	r.Cluster = append(r.Cluster,
		rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles", "clusterrolebindings"}, Verbs: append(slices.Clone(anyVerbs), namedVerbs...)})
	for _, p := range spec.ClusterPermissions {
		r.Cluster = append(r.Cluster, p.Rules...)
	}
	for _, p := range spec.Permissions {
		r.Cluster = append(r.Cluster, p.Rules...)
	}

	// The namespace: deployments and their service accounts.
	var deployments, accounts []string
	for _, d := range spec.DeploymentSpecs {
		deployments = append(deployments, d.Name)
		if sa := d.Spec.Template.Spec.ServiceAccountName; sa != "" {
			accounts = append(accounts, sa)
		}
	}
	for _, p := range append(slices.Clone(spec.Permissions), spec.ClusterPermissions...) {
		if p.ServiceAccountName != "" {
			accounts = append(accounts, p.ServiceAccountName)
		}
	}

	// The other manifests, by kind.
	type gr struct{ group, resource string }
	clusterObjs, nsObjs := map[gr][]string{}, map[gr][]string{}
	if b.Loaded != nil {
		for _, o := range b.Loaded.Objects {
			kind := o.GetKind()
			if kind == "ClusterServiceVersion" || kind == "CustomResourceDefinition" {
				continue
			}
			group := schema.FromAPIVersionAndKind(o.GetAPIVersion(), kind).Group
			if res, ok := clusterScoped[kind]; ok {
				if kind != "ClusterRole" && kind != "ClusterRoleBinding" {
					k := gr{group, res}
					clusterObjs[k] = append(clusterObjs[k], o.GetName())
				}
				if kind == "ClusterRole" {
					r.Cluster = append(r.Cluster, objectRules(o.Object)...)
				}
				continue
			}
			switch kind {
			case "ServiceAccount":
				accounts = append(accounts, o.GetName())
				continue
			case "Role":
				r.Namespace = append(r.Namespace, objectRules(o.Object)...)
			}
			res, ok := namespaced[kind]
			if !ok {
				res = plural(kind)
			}
			k := gr{group, res}
			nsObjs[k] = append(nsObjs[k], o.GetName())
		}
	}
	for _, k := range sortedBy(clusterObjs, func(k gr) string { return k.group + "/" + k.resource }) {
		r.Cluster = append(r.Cluster, byName(k.group, k.resource, clusterObjs[k])...)
	}
	r.Namespace = append(r.Namespace, byName("apps", "deployments", deployments)...)
	r.Namespace = append(r.Namespace, byName("", "serviceaccounts", accounts)...)
	for _, k := range sortedBy(nsObjs, func(k gr) string { return k.group + "/" + k.resource }) {
		r.Namespace = append(r.Namespace, byName(k.group, k.resource, nsObjs[k])...)
	}
	r.Cluster = MergeRules(r.Cluster)
	r.Namespace = MergeRules(r.Namespace)
	return r, nil
}

// byName returns the two rules of a resource the installer manages
// objects of: anyVerbs on the resource, namedVerbs on names; none when
// names is empty.
func byName(group, resource string, names []string) []rbacv1.PolicyRule {
	if len(names) == 0 {
		return nil
	}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{group}, Resources: []string{resource}, Verbs: slices.Clone(anyVerbs)},
		{APIGroups: []string{group}, Resources: []string{resource}, Verbs: slices.Clone(namedVerbs), ResourceNames: names},
	}
}

// objectRules reads the rules of a shipped ClusterRole or Role.
func objectRules(obj map[string]any) []rbacv1.PolicyRule {
	data, err := json.Marshal(obj["rules"])
	if err != nil {
		return nil
	}
	var rules []rbacv1.PolicyRule
	if json.Unmarshal(data, &rules) != nil {
		return nil
	}
	return rules
}

// plural is the API resource of a kind whose resource is not known: its
// lowercase plural, as Kubernetes names resources.
func plural(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es"
	case strings.HasSuffix(k, "y") && !strings.HasSuffix(k, "ay") && !strings.HasSuffix(k, "ey") && !strings.HasSuffix(k, "oy"):
		return k[:len(k)-1] + "ies"
	}
	return k + "s"
}

func sortedBy[K comparable, V any](m map[K]V, key func(K) string) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

// MergeRules returns rules without repeats, in a stable order: rules that
// differ only in resourceNames become one rule with the sorted union of
// the names, identical rules one rule, each where its first copy was. The
// union of several bundles' rules (every listed version of a package may
// be installed or upgraded to) goes through it.
func MergeRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	at := map[string]int{}
	for _, r := range rules {
		names := r.ResourceNames
		r.ResourceNames = nil
		keyData, _ := json.Marshal(r)
		key := string(keyData)
		if len(names) > 0 {
			key += " named"
		}
		i, ok := at[key]
		if !ok {
			r.ResourceNames = slices.Clone(names)
			at[key] = len(out)
			out = append(out, r)
			continue
		}
		if len(names) > 0 {
			out[i].ResourceNames = append(out[i].ResourceNames, names...)
		}
	}
	for i := range out {
		if len(out[i].ResourceNames) > 0 {
			sort.Strings(out[i].ResourceNames)
			out[i].ResourceNames = slices.Compact(out[i].ResourceNames)
		}
	}
	return out
}

// Merge returns the union of the rules of rs (MergeRules on each scope).
func Merge(rs ...InstallerRules) InstallerRules {
	var out InstallerRules
	for _, r := range rs {
		out.Cluster = append(out.Cluster, r.Cluster...)
		out.Namespace = append(out.Namespace, r.Namespace...)
	}
	out.Cluster = MergeRules(out.Cluster)
	out.Namespace = MergeRules(out.Namespace)
	return out
}
