package olm

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/testenv"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// allows reports whether rules let a subject do verb on group/resource
// name, as RBAC's rule matching does ("*" in apiGroups, resources and
// verbs; resourceNames exact, none for any name).
func allows(rules []rbacv1.PolicyRule, group, resource, verb, name string) bool {
	in := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	for _, r := range rules {
		if in(r.APIGroups, group) && in(r.Resources, resource) && in(r.Verbs, verb) &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name)) {
			return true
		}
	}
	return false
}

// TestInstaller derives the installer rules of a corpus bundle that ships
// CRDs, ClusterRoles, Services and a Secret beside its CSV: the installer
// may manage each of them by name, and holds every rule the CSV's
// permissions and clusterPermissions and the shipped ClusterRoles grant;
// the union over bundles has no repeats.
func TestInstaller(t *testing.T) {
	shared := testenv.RequireShared(t)
	b, err := bundle.Load(filepath.Join(shared, "corpus", "community-operators", "edp-keycloak-operator", "1.33.0"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Installer(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range b.Loaded.V1CRDs {
		for _, verb := range []string{"create", "get", "update", "patch", "delete"} {
			if !allows(r.Cluster, "apiextensions.k8s.io", "customresourcedefinitions", verb, c.Name) {
				t.Errorf("the installer may not %s the CRD %s", verb, c.Name)
			}
		}
	}
	if allows(r.Cluster, "apiextensions.k8s.io", "customresourcedefinitions", "delete", "other.example.com") {
		t.Error("the installer may delete a CRD that is not the bundle's")
	}
	spec := b.CSV.Spec.InstallStrategy.StrategySpec
	var granted []rbacv1.PolicyRule
	for _, p := range append(spec.ClusterPermissions, spec.Permissions...) {
		granted = append(granted, p.Rules...)
	}
	kinds := map[string]int{}
	for _, o := range b.Loaded.Objects {
		kinds[o.GetKind()]++
		switch o.GetKind() {
		case "ClusterRole":
			granted = append(granted, objectRules(o.Object)...)
			if !allows(r.Cluster, "rbac.authorization.k8s.io", "clusterroles", "update", o.GetName()) {
				t.Errorf("the installer may not update the shipped ClusterRole %s", o.GetName())
			}
		case "Service", "Secret":
			if !allows(r.Namespace, "", strings.ToLower(o.GetKind())+"s", "update", o.GetName()) {
				t.Errorf("the installer may not update the shipped %s %s", o.GetKind(), o.GetName())
			}
		}
	}
	if kinds["ClusterRole"] == 0 || kinds["Service"] == 0 || kinds["Secret"] == 0 {
		t.Fatalf("the bundle ships %v: pick one with ClusterRoles, Services and a Secret", kinds)
	}
	// What the installer grants it must hold (RBAC's escalation check).
	for _, g := range granted {
		for _, grp := range g.APIGroups {
			for _, res := range g.Resources {
				for _, verb := range g.Verbs {
					names := g.ResourceNames
					if len(names) == 0 {
						names = []string{""}
					}
					for _, n := range names {
						if !allows(r.Cluster, grp, res, verb, n) {
							t.Errorf("the installer grants %s on %s/%s %q without holding it", verb, grp, res, n)
						}
					}
				}
			}
		}
	}
	for _, d := range spec.DeploymentSpecs {
		if !allows(r.Namespace, "apps", "deployments", "patch", d.Name) || !allows(r.Namespace, "", "serviceaccounts", "update", d.Spec.Template.Spec.ServiceAccountName) {
			t.Errorf("the installer may not manage the deployment %s or its service account", d.Name)
		}
	}
	if allows(r.Namespace, "apps", "deployments", "delete", "someone-else") {
		t.Error("the installer may delete any deployment")
	}
	// The union of the same rules twice is the rules.
	if m := Merge(r, r); len(m.Cluster) != len(r.Cluster) || len(m.Namespace) != len(r.Namespace) {
		t.Errorf("Merge(r, r): %d and %d rules, want %d and %d", len(m.Cluster), len(m.Namespace), len(r.Cluster), len(r.Namespace))
	}

	// Rendered: the ClusterRole holds the ClusterExtension's finalizer rule
	// too; cluster-admin only when asked for.
	data, err := ClusterExtension(ExtensionOptions{Package: b.Package, Namespace: "keycloak", ServiceAccount: "installer", Rules: r})
	if err != nil {
		t.Fatal(err)
	}
	var kindsOut []string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var obj struct {
			Kind  string              `json:"kind"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		kindsOut = append(kindsOut, obj.Kind)
		if obj.Kind == "ClusterRole" && !allows(obj.Rules, "olm.operatorframework.io", "clusterextensions/finalizers", "update", b.Package) {
			t.Errorf("the installer ClusterRole lacks the finalizer rule:\n%s", doc)
		}
	}
	if got := strings.Join(kindsOut, ","); got != "ServiceAccount,ClusterRole,ClusterRoleBinding,Role,RoleBinding,ClusterExtension" || strings.Contains(string(data), "cluster-admin") || strings.Contains(string(data), "creationTimestamp") {
		t.Errorf("rendered %s:\n%s", got, data)
	}
	admin, err := ClusterExtension(ExtensionOptions{Package: b.Package, Namespace: "keycloak", ServiceAccount: "installer", InstallerRBAC: InstallerRBACClusterAdmin})
	if err != nil || !strings.Contains(string(admin), "name: cluster-admin") || strings.Contains(string(admin), "kind: Role") {
		t.Errorf("installerRBAC cluster-admin: %v\n%s", err, admin)
	}
	if _, err := ClusterExtension(ExtensionOptions{Package: b.Package, Namespace: "keycloak", ServiceAccount: "installer", InstallerRBAC: "all"}); err == nil || !strings.Contains(err.Error(), "installerRBAC") {
		t.Errorf("an unknown installerRBAC: %v", err)
	}
}
