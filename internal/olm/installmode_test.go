package olm

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-publish/publish/internal/crdcheck"
	"github.com/operator-publish/publish/internal/testenv"
)

func modes(types ...v1alpha1.InstallModeType) []v1alpha1.InstallMode {
	var out []v1alpha1.InstallMode
	for _, t := range []v1alpha1.InstallModeType{v1alpha1.InstallModeTypeOwnNamespace, v1alpha1.InstallModeTypeSingleNamespace, v1alpha1.InstallModeTypeMultiNamespace, v1alpha1.InstallModeTypeAllNamespaces} {
		on := false
		for _, x := range types {
			on = on || x == t
		}
		out = append(out, v1alpha1.InstallMode{Type: t, Supported: on})
	}
	return out
}

// TestInstallModeProblem follows operator-controller v1.11.0's
// registry+v1 config schema (rukpak/bundle/registryv1.go): no
// watchNamespace needs AllNamespaces, the install namespace OwnNamespace,
// another namespace SingleNamespace, and an AllNamespaces-only CSV takes
// none.
func TestInstallModeProblem(t *testing.T) {
	const (
		own    = v1alpha1.InstallModeTypeOwnNamespace
		single = v1alpha1.InstallModeTypeSingleNamespace
		multi  = v1alpha1.InstallModeTypeMultiNamespace
		all    = v1alpha1.InstallModeTypeAllNamespaces
	)
	const f = "clusters.edge.olm.clusterExtensions[0]"
	for _, tc := range []struct {
		name  string
		modes []v1alpha1.InstallMode
		watch string
		want  string // "" installs
	}{
		{"all", modes(all), "", ""},
		{"all and own, no watch", modes(own, all), "", ""},
		{"all and own, own", modes(own, all), "etcd", ""},
		{"own only, no watch", modes(own), "", f + ".watchNamespace (to etcd, the install namespace, for OwnNamespace)"},
		{"own and single, no watch", modes(own, single), "", "supports OwnNamespace, SingleNamespace but not AllNamespaces"},
		{"own only, own", modes(own), "etcd", ""},
		{"own only, another", modes(own), "apps", "set watchNamespace to etcd (OwnNamespace)"},
		{"single only, another", modes(single), "apps", ""},
		{"single only, own", modes(single), "etcd", "set watchNamespace to another namespace (SingleNamespace)"},
		{"all only, watch", modes(all), "apps", "remove " + f + ".watchNamespace"},
		{"multi only", modes(multi), "", "install it with OLM v0"},
		{"none", nil, "", "supports no install mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := InstallModeProblem(tc.modes, "etcd", tc.watch, f)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("problem %q, want %q", got, tc.want)
			}
		})
	}
}

func TestExtensionSelects(t *testing.T) {
	e := ExtensionOptions{Channels: []string{"stable"}, Version: ">=1.0.0 <2"}
	for _, tc := range []struct {
		version  string
		channels []string
		want     bool
	}{
		{"1.2.0", []string{"alpha", "stable"}, true},
		{"1.2.0", []string{"alpha"}, false},
		{"2.0.0", []string{"stable"}, false},
		{"0.9.0", []string{"stable"}, false},
	} {
		if got := e.Selects(tc.version, tc.channels); got != tc.want {
			t.Errorf("Selects(%s, %v) = %v, want %v", tc.version, tc.channels, got, tc.want)
		}
	}
	if !(ExtensionOptions{}).Selects("0.1.0", nil) {
		t.Error("an extension without channels or range selects every bundle")
	}
}

func TestClusterExtensionWatchNamespace(t *testing.T) {
	data, err := ClusterExtension(ExtensionOptions{Package: "etcd", Namespace: "etcd", WatchNamespace: "etcd"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "  config:\n    configType: Inline\n    inline:\n      watchNamespace: etcd\n") {
		t.Errorf("ClusterExtension with watchNamespace:\n%s", data)
	}
	data, err = ClusterExtension(ExtensionOptions{Package: "etcd", Namespace: "etcd"})
	if err != nil || strings.Contains(string(data), "config:") {
		t.Errorf("ClusterExtension without watchNamespace (%v):\n%s", err, data)
	}
	if _, err := ClusterExtension(ExtensionOptions{Package: "etcd", Namespace: "etcd", WatchNamespace: "Not_A_Namespace"}); err == nil || !strings.Contains(err.Error(), "watchNamespace") {
		t.Errorf("bad watchNamespace: %v", err)
	}
}

// TestClusterExtensionWatchNamespaceCRD: the ClusterExtension with a
// watchNamespace passes operator-controller v1.11.0's experimental CRD,
// which has spec.config; the standard CRD drops spec.config, as
// docs/olm.md says (the module from the module cache; skipped without).
func TestClusterExtensionWatchNamespaceCRD(t *testing.T) {
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/operator-framework/operator-controller@v1.11.0").Output()
	var mod struct{ Dir string }
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err != nil || mod.Dir == "" {
		testenv.Skipf(t, "this test needs the operator-controller v1.11.0 module (go mod download): %v", err)
	}
	data, err := ClusterExtension(ExtensionOptions{Package: "etcd", Namespace: "etcd", WatchNamespace: "apps", Catalog: DefaultSourceName})
	if err != nil {
		t.Fatal(err)
	}
	crds := filepath.Join(mod.Dir, "helm", "olmv1", "base", "operator-controller", "crd")
	exp, err := crdcheck.Load(filepath.Join(crds, "experimental"))
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Validate(data); err != nil {
		t.Errorf("experimental CRD: %v\n%s", err, data)
	}
	std, err := crdcheck.Load(filepath.Join(crds, "standard"))
	if err != nil {
		t.Fatal(err)
	}
	if err := std.Validate(data); err == nil || !strings.Contains(err.Error(), "config") {
		t.Errorf("standard CRD: %v, want spec.config refused", err)
	}
	plain, _ := ClusterExtension(ExtensionOptions{Package: "etcd", Namespace: "etcd", Catalog: DefaultSourceName})
	if err := std.Validate(plain); err != nil {
		t.Errorf("standard CRD, no watchNamespace: %v", err)
	}
}

// TestDefaultWatchNamespace: a ClusterExtension without watchNamespace
// gets the install namespace when its bundles all support OwnNamespace and
// some not AllNamespaces; none when all support AllNamespaces, when one
// supports only SingleNamespace (the namespace to watch must be named),
// or when it picks no bundle.
func TestDefaultWatchNamespace(t *testing.T) {
	const (
		own    = v1alpha1.InstallModeTypeOwnNamespace
		single = v1alpha1.InstallModeTypeSingleNamespace
		all    = v1alpha1.InstallModeTypeAllNamespaces
	)
	for _, tc := range []struct {
		name  string
		modes [][]v1alpha1.InstallMode
		want  string
	}{
		{"own only", [][]v1alpha1.InstallMode{modes(own)}, "etcd"},
		{"own and single", [][]v1alpha1.InstallMode{modes(own, single)}, "etcd"},
		{"own only and own with all", [][]v1alpha1.InstallMode{modes(own), modes(own, all)}, "etcd"},
		{"all", [][]v1alpha1.InstallMode{modes(own, all), modes(all)}, ""},
		{"single only", [][]v1alpha1.InstallMode{modes(single)}, ""},
		{"own only and all only", [][]v1alpha1.InstallMode{modes(own), modes(all)}, ""},
		{"no bundle", nil, ""},
	} {
		if got := DefaultWatchNamespace(tc.modes, "etcd"); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestClusterExtensionUpgradeConstraintPolicy: the policy is rendered in
// spec.source.catalog as operator-controller v1.11.0's CRD has it (its
// standard CRD takes it; crdcheck), none by default, and a value outside
// the CRD's enum is refused, naming the two values.
func TestClusterExtensionUpgradeConstraintPolicy(t *testing.T) {
	for _, p := range []string{UpgradeCatalogProvided, UpgradeSelfCertified} {
		data, err := ClusterExtension(ExtensionOptions{Package: "etcd", Namespace: "etcd", UpgradeConstraintPolicy: p})
		if err != nil || !strings.Contains(string(data), "    catalog:\n      packageName: etcd\n      upgradeConstraintPolicy: "+p+"\n") {
			t.Errorf("%s (%v):\n%s", p, err, data)
		}
	}
	if data, _ := ClusterExtension(ExtensionOptions{Package: "etcd", Namespace: "etcd"}); strings.Contains(string(data), "upgradeConstraintPolicy") {
		t.Errorf("no policy set:\n%s", data)
	}
	_, err := ClusterExtension(ExtensionOptions{Package: "etcd", Namespace: "etcd", UpgradeConstraintPolicy: "Never"})
	if err == nil || !strings.Contains(err.Error(), `upgradeConstraintPolicy "Never": want CatalogProvided (the default) or SelfCertified`) {
		t.Errorf("Never: %v", err)
	}
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/operator-framework/operator-controller@v1.11.0").Output()
	var mod struct{ Dir string }
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err != nil || mod.Dir == "" {
		testenv.Skipf(t, "this test needs the operator-controller v1.11.0 module (go mod download): %v", err)
	}
	std, err := crdcheck.Load(filepath.Join(mod.Dir, "helm", "olmv1", "base", "operator-controller", "crd", "standard"))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := ClusterExtension(ExtensionOptions{Package: "etcd", Namespace: "etcd", UpgradeConstraintPolicy: UpgradeSelfCertified, Catalog: DefaultSourceName})
	if err := std.Validate(data); err != nil {
		t.Errorf("standard CRD: %v\n%s", err, data)
	}
}
