package target

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/olm"
	rbacv1 "k8s.io/api/rbac/v1"
)

const testDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

// renderedFiles runs RenderFromState for cluster edge with o and a catalog
// image recorded in the state, and returns rendered/edge's files.
func renderedFiles(t *testing.T, o OLMOptions) map[string]string {
	t.Helper()
	tg, err := New(OLM, Settings{Cluster: "edge", Own: o})
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Check(); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	state := &gitops.State{Rendered: map[string]string{"edge": "olm registry.local/olm/catalog@" + testDigest}}
	if err := renderFromStateDir(tg, root, nil, state); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	entries, _ := os.ReadDir(filepath.Join(root, "rendered", "edge"))
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(root, "rendered", "edge", e.Name()))
		out[e.Name()] = string(data)
	}
	return out
}

func names(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestOLMCatalogKinds: catalogKinds decides what rendered/<cluster> holds:
// the CatalogSource (default), the ClusterCatalog by digest and the
// ClusterExtensions, or both; polling names the tag pushed.
func TestOLMCatalogKinds(t *testing.T) {
	if got := names(renderedFiles(t, OLMOptions{})); strings.Join(got, ",") != CatalogSourceFile {
		t.Errorf("default: %v", got)
	}
	ext := []olm.ExtensionOptions{{Package: "etcd", Namespace: "etcd", Channels: []string{"singlenamespace-alpha"}}, {Package: "flux", Name: "flux-v2", Namespace: "flux", Version: ">=2.0.0 <3", ServiceAccount: "flux-installer", InstallerRBAC: olm.InstallerRBACClusterAdmin}}
	got := renderedFiles(t, OLMOptions{CatalogKinds: []string{KindClusterCatalog}, Extensions: ext})
	if strings.Join(names(got), ",") != "clustercatalog.yaml,clusterextension-etcd.yaml,clusterextension-flux-v2.yaml" {
		t.Fatalf("ClusterCatalog only: %v", names(got))
	}
	if cc := got[ClusterCatalogFile]; !strings.Contains(cc, "ref: registry.local/olm/catalog@"+testDigest) || strings.Contains(cc, "pollIntervalMinutes") {
		t.Errorf("ClusterCatalog:\n%s", cc)
	}
	if ce := got["clusterextension-etcd.yaml"]; !strings.Contains(ce, "olm.operatorframework.io/metadata.name: operator-publish") || strings.Contains(ce, "ServiceAccount") {
		t.Errorf("ClusterExtension etcd:\n%s", ce)
	}
	if ce := got["clusterextension-flux-v2.yaml"]; !strings.Contains(ce, "kind: ServiceAccount") || !strings.Contains(ce, "kind: ClusterRoleBinding") || !strings.Contains(ce, "name: flux-installer") || !strings.Contains(ce, "name: cluster-admin") || strings.Contains(ce, "kind: Role") {
		t.Errorf("ClusterExtension flux with a service account:\n%s", ce)
	}
	got = renderedFiles(t, OLMOptions{CatalogImage: "registry.local/olm/catalog:v1", CatalogKinds: []string{KindCatalogSource, KindClusterCatalog}, ClusterCatalog: olm.CatalogOptions{Name: "ours", PollIntervalMinutes: 15}})
	if strings.Join(names(got), ",") != "catalogsource.yaml,clustercatalog.yaml" {
		t.Fatalf("both: %v", names(got))
	}
	if cc := got[ClusterCatalogFile]; !strings.Contains(cc, "ref: registry.local/olm/catalog:v1") || !strings.Contains(cc, "pollIntervalMinutes: 15") || !strings.Contains(cc, "name: ours") {
		t.Errorf("polled ClusterCatalog:\n%s", cc)
	}
	if cs := got[CatalogSourceFile]; !strings.Contains(cs, "image: registry.local/olm/catalog@"+testDigest) {
		t.Errorf("CatalogSource:\n%s", cs)
	}
}

// TestOLMv1Check: wrong OLM v1 settings stop the run before anything is
// mirrored, naming the publish.yaml entry.
func TestOLMv1Check(t *testing.T) {
	for name, tc := range map[string]struct {
		o    OLMOptions
		want string
	}{
		"kind":                 {OLMOptions{CatalogKinds: []string{"Subscription"}}, "catalogKinds"},
		"extension without v1": {OLMOptions{Extensions: []olm.ExtensionOptions{{Package: "etcd", Namespace: "etcd"}}}, "ClusterCatalog"},
		"no namespace":         {OLMOptions{CatalogKinds: []string{KindClusterCatalog}, Extensions: []olm.ExtensionOptions{{Package: "etcd"}}}, "namespace is required"},
		"bad range":            {OLMOptions{CatalogKinds: []string{KindClusterCatalog}, Extensions: []olm.ExtensionOptions{{Package: "etcd", Namespace: "etcd", Version: ">=> 1"}}}, "version"},
		"negative poll":        {OLMOptions{CatalogKinds: []string{KindClusterCatalog}, ClusterCatalog: olm.CatalogOptions{PollIntervalMinutes: -1}}, "pollIntervalMinutes"},
	} {
		tg, _ := New(OLM, Settings{Cluster: "edge", Own: tc.o})
		if err := tg.Check(); err == nil || !strings.Contains(err.Error(), "publish.yaml clusters.edge.olm") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, tc.want)
		}
	}
}

// TestOLMInstallerFromState: `publish render` cannot derive a
// ClusterExtension's installer RBAC (it reads no bundle): it keeps the
// rules the last run rendered, and without them says to run publish run
// or choose cluster-admin.
func TestOLMInstallerFromState(t *testing.T) {
	o := OLMOptions{CatalogKinds: []string{KindClusterCatalog}, Extensions: []olm.ExtensionOptions{{Package: "etcd", Namespace: "etcd", ServiceAccount: "etcd-installer"}}}
	tg, err := New(OLM, Settings{Cluster: "edge", Own: o})
	if err != nil {
		t.Fatal(err)
	}
	state := &gitops.State{Rendered: map[string]string{"edge": "olm registry.local/olm/catalog@" + testDigest}}
	root := t.TempDir()
	if err := renderFromStateDir(tg, root, nil, state); err == nil || !strings.Contains(err.Error(), "publish run --target olm") || !strings.Contains(err.Error(), "installerRBAC: cluster-admin") {
		t.Fatalf("no rules rendered yet: %v", err)
	}
	// What a run rendered: the rules come back as they were.
	ext := o.Extensions[0]
	ext.Catalog = olm.DefaultSourceName
	ext.Rules = olm.InstallerRules{
		Cluster:   []rbacv1.PolicyRule{{APIGroups: []string{"etcd.database.coreos.com"}, Resources: []string{"etcdclusters"}, Verbs: []string{"*"}}},
		Namespace: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}, ResourceNames: []string{"etcd-operator"}}},
	}
	want, err := olm.ClusterExtension(ext)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "rendered", "edge", ClusterExtensionFile("etcd"))
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := renderFromStateDir(tg, root, nil, state); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != string(want) {
		t.Errorf("ClusterExtension rendered from the state:\n%s\nwant:\n%s", got, want)
	}
}
