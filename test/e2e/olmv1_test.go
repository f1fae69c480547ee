package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
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
// and its RBAC for operator-controller before v1.11), and the
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
      - package: flux
        namespace: flux
        serviceAccount: flux-installer
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
		tg, err := target.New(target.OLM, target.Settings{Cluster: cluster, OLM: cfg.ClusterOLM(cluster).TargetOptions()})
		if err != nil {
			t.Fatal(err)
		}
		if err := tg.Check(); err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		if err := tg.RenderFromState(root, arts, state); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, "rendered", cluster)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range objects(t, e.Name(), data) {
				kinds[u.GetKind()]++
				if err := k.apply(ctx, u, true); err != nil {
					t.Errorf("%s/%s: %s %s refused by the dry run: %v\n%s", cluster, e.Name(), u.GetKind(), u.GetName(), err, data)
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
}
