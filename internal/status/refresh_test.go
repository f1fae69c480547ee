package status

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"

	"github.com/operator-publish/publish/internal/adopt"
)

func pod(name string, labels map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "cpaas-system", "labels": labels},
	}}
}

// TestRefresh: a version Present for longer than the grace period and
// missing from its PackageManifest restarts the pods of the PackageManifest's
// CatalogSource (only those); within the grace period, or once listed,
// nothing is restarted.
func TestRefresh(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	written := func(u *unstructured.Unstructured, at time.Time) *unstructured.Unstructured {
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "platform", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &metav1.Time{Time: at}}})
		return u
	}
	mk := func(objs ...runtime.Object) *fake.FakeDynamicClient {
		return fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			adopt.ArtifactVersionGVR: "ArtifactVersionList",
			PackageManifestGVR:       "PackageManifestList",
			PodGVR:                   "PodList",
		}, objs...)
	}
	pm := packageManifest("0.9.3")
	catalogPods := []runtime.Object{
		pod("platform-abc", map[string]any{CatalogSourceLabel: "platform"}),
		pod("other-xyz", map[string]any{CatalogSourceLabel: "other"}),
	}

	client := mk(append(catalogPods, written(av("etcd.v0.9.4", "v0.9.4", true, presentSuccess, true), now.Add(-11*time.Minute)), pm)...)
	rs, err := Refresh(context.Background(), client, "cpaas-system", 10*time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Pod != "platform-abc" || rs[0].CatalogSource != "platform" || rs[0].Versions[0] != "etcd.v0.9.4" {
		t.Fatalf("%+v", rs)
	}
	left, _ := client.Resource(PodGVR).Namespace("cpaas-system").List(context.Background(), metav1.ListOptions{})
	if len(left.Items) != 1 || left.Items[0].GetName() != "other-xyz" {
		t.Errorf("pods left: %v", left.Items)
	}
	var b bytes.Buffer
	PrintRestarted(&b, rs)
	if !strings.Contains(b.String(), "restarted pod cpaas-system/platform-abc of CatalogSource platform: [etcd.v0.9.4]") {
		t.Errorf("%s", b.String())
	}

	// Within the grace period: nothing.
	client = mk(append(catalogPods, written(av("etcd.v0.9.4", "v0.9.4", true, presentSuccess, true), now.Add(-time.Minute)), pm)...)
	if rs, err := Refresh(context.Background(), client, "cpaas-system", 10*time.Minute, now); err != nil || len(rs) != 0 {
		t.Errorf("within grace: %+v %v", rs, err)
	}
	// Listed: nothing.
	client = mk(append(catalogPods, written(av("etcd.v0.9.4", "v0.9.4", true, presentSuccess, true), now.Add(-time.Hour)), packageManifest("0.9.4"))...)
	if rs, err := Refresh(context.Background(), client, "cpaas-system", 10*time.Minute, now); err != nil || len(rs) != 0 {
		t.Errorf("listed: %+v %v", rs, err)
	}
}
