package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-publish/publish/internal/testenv"
)

// packageManifestCRD stands in for OLM's package server, which cannot run
// here: packages.operators.coreos.com/v1 packagemanifests served as a CRD,
// so that the objects (in the package server's documented shape) and the
// RBAC on them are those of a real API server.
const packageManifestCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: packagemanifests.packages.operators.coreos.com}
spec:
  group: packages.operators.coreos.com
  names: {kind: PackageManifest, listKind: PackageManifestList, plural: packagemanifests, singular: packagemanifest}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestRefreshCatalogOperator runs `publish adopt --refresh-after
// --refresh-catalog-operator` on the real kube-apiserver as the
// template's service account: etcd 0.9.4 is Present/Success, an upgrade of
// 0.9.3, and the PackageManifest still shows 0.9.3 as its head. With only
// refresh.yaml the catalog pods are restarted and the catalog-operator
// restart is refused, naming the permission (exit 2); with
// refresh-catalog-operator.yaml too, the catalog-operator Deployment gets
// the rollout-restart annotation and adopt says what it restarted.
func TestRefreshCatalogOperator(t *testing.T) {
	shared := testenv.RequireShared(t)
	srv := startAPIServer(t)
	ctx := context.Background()
	k := srv.client(t)
	k.installAlaudaCRDs(t, ctx, shared)
	crdDir := t.TempDir()
	os.WriteFile(filepath.Join(crdDir, "packagemanifests.yaml"), []byte(packageManifestCRD), 0o644)
	k.installCRDs(t, ctx, crdDir)
	k.namespace(t, ctx, "cpaas-system")
	apply := func(name, data string) {
		t.Helper()
		for _, u := range objects(t, name, []byte(data)) {
			if err := k.apply(ctx, u, false); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
	template := func(rel string) string {
		data, err := os.ReadFile(filepath.Join("../../catalog-repo-template", rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	apply("rbac.yaml", template("adopt/rbac/rbac.yaml"))
	apply("refresh.yaml", template("adopt/rbac/refresh.yaml"))
	apply("objects", `apiVersion: v1
kind: ServiceAccount
metadata: {name: default, namespace: cpaas-system}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: catalog-operator, namespace: cpaas-system}
spec:
  selector: {matchLabels: {app: catalog-operator}}
  template:
    metadata: {labels: {app: catalog-operator}}
    spec:
      containers: [{name: catalog-operator, image: registry.example.com/olm:v0.19.0}]
---
apiVersion: app.alauda.io/v1alpha1
kind: Artifact
metadata: {name: etcd, namespace: cpaas-system, labels: {cpaas.io/library: platform}}
spec:
  type: bundle
  present: true
  registry: registry.example.com
  repository: platform/etcd-bundle
  artifactVersionSelector: {matchLabels: {cpaas.io/artifact-version: etcd}}
---
apiVersion: packages.operators.coreos.com/v1
kind: PackageManifest
metadata: {name: etcd, namespace: cpaas-system}
status:
  catalogSource: platform
  catalogSourceNamespace: cpaas-system
  packageName: etcd
  defaultChannel: alpha
  channels:
  - name: alpha
    currentCSV: etcdoperator.v0.9.3
    currentCSVDesc: {displayName: etcd, version: 0.9.3}
    entries: [{name: etcdoperator.v0.9.3, version: 0.9.3}]
`)
	for _, v := range []string{"0.9.3", "0.9.4"} {
		apply("etcd.v"+v, `apiVersion: app.alauda.io/v1alpha1
kind: ArtifactVersion
metadata: {name: etcd.v`+v+`, namespace: cpaas-system, labels: {cpaas.io/artifact-version: etcd, cpaas.io/library: platform}}
spec: {tag: v`+v+`, present: true}
`)
		ri := k.dyn.Resource(artifactVersionGVR).Namespace("cpaas-system")
		u, err := ri.Get(ctx, "etcd.v"+v, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		unstructured.SetNestedMap(u.Object, map[string]any{"phase": "Present", "reason": "Success", "version": v}, "status")
		if _, err := ri.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	podGVR := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	catalogPod := func() {
		t.Helper()
		apply("pod", `apiVersion: v1
kind: Pod
metadata: {name: platform-abc, namespace: cpaas-system, labels: {olm.catalogSource: platform}}
spec:
  automountServiceAccountToken: false
  containers: [{name: registry-server, image: registry.example.com/platform-catalog:v1}]
`)
	}
	catalogPod()
	kc := srv.kubeconfig(t, "system:serviceaccount:cpaas-system:publish-adopt")
	adopt := func() (string, int) {
		cmd := exec.Command(publishBin, "adopt", "--kubeconfig", kc, "--namespace", "cpaas-system",
			"--refresh-after", "1ns", "--refresh-catalog-operator", "cpaas-system/catalog-operator")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	restartedAt := func() string {
		d, err := k.dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("cpaas-system").Get(ctx, "catalog-operator", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/restartedAt")
		return s
	}

	// refresh.yaml alone: the pods, and a refusal naming the permission.
	out, code := adopt()
	if code != 2 || !strings.Contains(out, "restarted pod cpaas-system/platform-abc of CatalogSource platform: [etcd.v0.9.4]") ||
		!strings.Contains(out, "the account needs patch on deployments/catalog-operator in cpaas-system") {
		t.Fatalf("without the catalog-operator Role: exit %d\n%s", code, out)
	}
	if restartedAt() != "" {
		t.Fatal("the catalog-operator was restarted without the Role")
	}

	apply("refresh-catalog-operator.yaml", template("adopt/rbac/refresh-catalog-operator.yaml"))
	catalogPod()
	out, code = adopt()
	if code != 0 || !strings.Contains(out, "restarted deployment cpaas-system/catalog-operator (catalog-operator, rollout restart): upgrades [etcd.v0.9.4] Present but their PackageManifests still show etcd 0.9.3") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if restartedAt() == "" {
		t.Error("the catalog-operator's pod template has no restartedAt annotation")
	}
	if _, err := k.dyn.Resource(podGVR).Namespace("cpaas-system").Get(ctx, "platform-abc", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the catalog pod is still there: %v", err)
	}
	t.Logf("%s", out)
}
