package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/target"
	"github.com/operator-publish/publish/internal/testenv"
)

// OperatorControllerVersion is the operator-controller release whose CRDs
// the OLM v1 objects are checked against.
const OperatorControllerVersion = "v1.11.0"

// operatorControllerCRDs returns the directories of the standard
// ClusterCatalog and ClusterExtension CRDs of operator-controller
// OperatorControllerVersion, from its module (go mod download: about 2 MB,
// cached in the module cache). Unavailable: skip, or fail when integration
// tests are required.
func operatorControllerCRDs(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/operator-framework/operator-controller@"+OperatorControllerVersion).Output()
	var mod struct{ Dir string }
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err != nil || mod.Dir == "" {
		testenv.Skipf(t, "this test needs the operator-controller %s module (go mod download): %v", OperatorControllerVersion, err)
	}
	base := filepath.Join(mod.Dir, "helm", "olmv1", "base")
	return []string{filepath.Join(base, "catalogd", "crd", "standard"), filepath.Join(base, "operator-controller", "crd", "standard")}
}

// OpenShiftAPIVersion is the openshift/api module version whose
// ImageDigestMirrorSet and ImageTagMirrorSet CRDs the mirror sets are
// checked against.
const OpenShiftAPIVersion = "v0.0.0-20251015095338-264e80a2b6e7"

// mirrorSetCRDs copies the ImageDigestMirrorSet and ImageTagMirrorSet CRDs
// of openshift/api OpenShiftAPIVersion (payload-manifests/crds, from its
// module) into a directory of their own and returns it.
func mirrorSetCRDs(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/openshift/api@"+OpenShiftAPIVersion).Output()
	var mod struct{ Dir string }
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err != nil || mod.Dir == "" {
		testenv.Skipf(t, "this test needs the openshift/api %s module (go mod download): %v", OpenShiftAPIVersion, err)
	}
	dir := t.TempDir()
	for _, f := range []string{"0000_10_config-operator_01_imagedigestmirrorsets.crd.yaml", "0000_10_config-operator_01_imagetagmirrorsets.crd.yaml"} {
		data, err := os.ReadFile(filepath.Join(mod.Dir, "payload-manifests", "crds", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestOLMv1DryRun: the ClusterCatalog (by digest, and by tag with
// polling), the ClusterExtensions (with and without the service account
// and its RBAC for operator-controller before v1.11: cluster-admin when
// asked for, and the rules derived from a bundle, see installerRBAC), and the
// ImageDigestMirrorSet and ImageTagMirrorSet that the olm target renders
// from a publish.yaml pass a server-side dry run on kube-apiserver with
// operator-controller v1.11.0's and openshift/api's CRDs, their CEL rules
// included; the CatalogSource-free rendering holds only OLM v1 objects. A
// ClusterCatalog polling a digest, which the target never renders, is
// refused.
func TestOLMv1DryRun(t *testing.T) {
	dirs := append(operatorControllerCRDs(t), mirrorSetCRDs(t))
	srv := startAPIServer(t)
	ctx := context.Background()
	k := srv.client(t)
	for _, d := range dirs {
		k.installCRDs(t, ctx, d)
	}
	k.namespace(t, ctx, "etcd", "flux")

	p := filepath.Join(t.TempDir(), config.FileName)
	os.WriteFile(p, []byte(`apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
clusters:
  edge:
    target: olm
    olm:
      catalogKinds: [ClusterCatalog]
      clusterExtensions:
      - package: etcd
        namespace: etcd
        channels: [singlenamespace-alpha]
        version: ">=0.9.0 <1"
        upgradeConstraintPolicy: SelfCertified
      - package: flux
        namespace: flux
        serviceAccount: flux-installer
        installerRBAC: cluster-admin
      imageRedirection: [ImageDigestMirrorSet, ImageTagMirrorSet, containerd, CRI-O]
  polled:
    target: olm
    olm:
      catalogImage: registry.local/olm/catalog:v1
      catalogKinds: [ClusterCatalog]
      clusterCatalog:
        name: polled
        pollIntervalMinutes: 30
        priority: -10
`), 0o644)
	cfg, err := config.Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	state := &gitops.State{Rendered: map[string]string{}}
	digest := "registry.local/olm/catalog@sha256:" + strings.Repeat("ab", 32)
	d := "@sha256:" + strings.Repeat("cd", 32)
	arts := []model.ArtifactRecord{{Name: "etcd", Present: true, Versions: []model.VersionRecord{{Version: "0.9.4", Present: true, Images: []model.Image{
		{Source: "quay.io/coreos/etcd-operator" + d, Destination: "registry.local/mirror/coreos/etcd-operator" + d},
		{Source: "docker.io/library/busybox:1.36", Destination: "registry.local/mirror/library/busybox:1.36"},
	}}}}}
	kinds := map[string]int{}
	for _, cluster := range []string{"edge", "polled"} {
		state.Rendered[cluster] = "olm " + digest
		tg, err := target.New(target.OLM, target.Settings{Cluster: cluster, Own: cfg.TargetSettings(cluster, target.OLM)})
		if err != nil {
			t.Fatal(err)
		}
		if err := tg.Check(); err != nil {
			t.Fatal(err)
		}
		cat := render.Files{}
		if err := tg.RenderFromState(cat, arts, state); err != nil {
			t.Fatal(err)
		}
		for _, p := range slices.Sorted(maps.Keys(cat.Under("rendered/" + cluster))) {
			data := cat[p]
			for _, u := range objects(t, path.Base(p), data) {
				kinds[u.GetKind()]++
				if err := k.apply(ctx, u, true); err != nil {
					t.Errorf("%s/%s: %s %s refused by the dry run: %v\n%s", cluster, path.Base(p), u.GetKind(), u.GetName(), err, data)
				}
			}
		}
	}
	want := map[string]int{"ClusterCatalog": 2, "ClusterExtension": 2, "ServiceAccount": 1, "ClusterRoleBinding": 1, "ImageDigestMirrorSet": 1, "ImageTagMirrorSet": 1}
	for kind, n := range want {
		if kinds[kind] != n {
			t.Errorf("%d %s objects rendered, want %d (all: %v)", kinds[kind], kind, n, kinds)
		}
	}
	if kinds["CatalogSource"] != 0 {
		t.Errorf("catalogKinds [ClusterCatalog] rendered a CatalogSource")
	}
	if got := etcdExtension(t, cfg, arts, state); !strings.Contains(got, "upgradeConstraintPolicy: SelfCertified") {
		t.Errorf("the etcd ClusterExtension has no upgradeConstraintPolicy:\n%s", got)
	}

	t.Run("installer RBAC derived from a bundle", func(t *testing.T) { installerRBAC(t, ctx, srv, k) })

	// What the CRD forbids, and the target therefore never writes.
	bad := objects(t, "digest-polled", []byte(`apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata: {name: bad}
spec:
  source:
    type: Image
    image: {ref: "`+digest+`", pollIntervalMinutes: 10}
`))[0]
	if err := k.apply(ctx, bad, true); err == nil || !strings.Contains(err.Error(), "pollIntervalMinutes") {
		t.Errorf("a ClusterCatalog polling a digest: %v, want the CRD's refusal", err)
	}
	// An upgradeConstraintPolicy outside the CRD's enum, which
	// publish.yaml refuses (olm.ClusterExtension), is the CRD's refusal too.
	never := objects(t, "never", []byte(`apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata: {name: never}
spec:
  namespace: etcd
  source:
    sourceType: Catalog
    catalog: {packageName: etcd, upgradeConstraintPolicy: Never}
`))[0]
	if err := k.apply(ctx, never, true); err == nil || !strings.Contains(err.Error(), "upgradeConstraintPolicy") {
		t.Errorf("a ClusterExtension with upgradeConstraintPolicy Never: %v, want the CRD's refusal", err)
	}
}

// etcdExtension renders cluster edge of cfg from state and returns its
// etcd ClusterExtension file.
func etcdExtension(t *testing.T, cfg *config.Config, arts []model.ArtifactRecord, state *gitops.State) string {
	t.Helper()
	tg, err := target.New(target.OLM, target.Settings{Cluster: "edge", Own: cfg.TargetSettings("edge", target.OLM)})
	if err != nil {
		t.Fatal(err)
	}
	cat := render.Files{}
	if err := tg.RenderFromState(cat, arts, state); err != nil {
		t.Fatal(err)
	}
	return string(cat["rendered/edge/"+target.ClusterExtensionFile("etcd")])
}

// installerRBAC: the installer service account, ClusterRole, Role and
// bindings that olm.ClusterExtension renders from a corpus bundle's rules
// (olm.Installer) are created on the server and the ClusterExtension
// passes the dry run; then, acting as that service account
// (impersonation), a server-side dry run of what operator-controller does
// when it installs the bundle passes RBAC, escalation check included: the
// bundle's CRDs, its shipped objects, the CSV's deployments and their
// service accounts, and a ClusterRole (created for real) and
// ClusterRoleBinding granting the CSV's permissions and
// clusterPermissions. Deleting a CRD the bundle does not ship is refused.
func installerRBAC(t *testing.T, ctx context.Context, srv *apiServer, k *kube) {
	shared := testenv.RequireShared(t)
	b, err := bundle.Load(filepath.Join(shared, "corpus", "community-operators", "edp-keycloak-operator", "1.33.0"))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := olm.Installer(b)
	if err != nil {
		t.Fatal(err)
	}
	const ns, sa = "keycloak", "keycloak-installer"
	k.namespace(t, ctx, ns)
	data, err := olm.ClusterExtension(olm.ExtensionOptions{Package: b.Package, Namespace: ns, ServiceAccount: sa, Catalog: "operator-publish", Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, u := range objects(t, "clusterextension", data) {
		kinds[u.GetKind()]++
		if err := k.apply(ctx, u, u.GetKind() == "ClusterExtension"); err != nil {
			t.Fatalf("%s %s: %v\n%s", u.GetKind(), u.GetName(), err, data)
		}
	}
	if kinds["ClusterRole"] != 1 || kinds["Role"] != 1 || kinds["ClusterRoleBinding"] != 1 || kinds["RoleBinding"] != 1 || strings.Contains(string(data), "cluster-admin") {
		t.Fatalf("rendered %v:\n%s", kinds, data)
	}

	cfg := rest.CopyConfig(srv.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + sa}
	as := kubeFor(t, cfg)
	apply := func(u *unstructured.Unstructured, dryRun bool) error {
		if u.GetNamespace() == "" {
			if m, err := as.mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version); err == nil && m.Scope.Name() == meta.RESTScopeNameNamespace {
				u.SetNamespace(ns)
			}
		}
		return as.apply(ctx, u, dryRun)
	}
	// Dry runs, but for the ClusterRole of the CSV's permissions: it is
	// created, as the binding's authorization check reads it.
	try := func(u *unstructured.Unstructured) error {
		return apply(u, u.GetKind() != "ClusterRole" || !strings.HasSuffix(u.GetName(), ".generated"))
	}
	n := 0
	for _, o := range b.Loaded.Objects {
		if o.GetKind() == "ClusterServiceVersion" {
			continue
		}
		u := o.DeepCopy()
		if err := try(u); err != nil {
			t.Errorf("as the installer, %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		n++
	}
	spec := b.CSV.Spec.InstallStrategy.StrategySpec
	var granted []any
	for _, p := range append(spec.ClusterPermissions, spec.Permissions...) {
		for _, r := range p.Rules {
			granted = append(granted, toMap(t, r))
		}
	}
	generated := b.Package + ".generated"
	var csvObjs []*unstructured.Unstructured
	csvObjs = append(csvObjs,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": generated}, "rules": granted}},
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": generated},
			"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": generated}, "subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "x", "namespace": ns}}}})
	for _, d := range spec.DeploymentSpecs {
		csvObjs = append(csvObjs,
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": d.Name, "namespace": ns}, "spec": toMap(t, d.Spec)}},
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": d.Spec.Template.Spec.ServiceAccountName, "namespace": ns}}})
	}
	for _, u := range csvObjs {
		if err := try(u); err != nil {
			t.Errorf("as the installer, %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		n++
	}
	// Not the bundle's: another CRD.
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if err := as.dyn.Resource(crdGVR).Delete(ctx, "clusterextensions.olm.operatorframework.io", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) {
		t.Errorf("as the installer, deleting a CRD the bundle does not ship: %v, want forbidden", err)
	}
	t.Logf("the installer of %s may do the %d applies of its install (%d cluster rules, %d namespace rules)", b.CSVName, n, len(rules.Cluster), len(rules.Namespace))
}

// kubeFor is apiServer.client for another rest.Config.
func kubeFor(t *testing.T, cfg *rest.Config) *kube {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &kube{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// toMap is v as JSON-decoded unstructured content.
func toMap(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
