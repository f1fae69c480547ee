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

func deployment(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}}}},
	}}
}

// TestRefreshCatalogOperator: an upgrade (0.9.4 Present while the
// PackageManifest still shows 0.9.3 as its head) past the grace period
// restarts the catalog-operator Deployment too (a rollout restart), when
// asked; a version older than the head, or no CatalogOperator, restarts
// no Deployment; a missing Deployment is an error naming the flag.
func TestRefreshCatalogOperator(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	mk := func(objs ...runtime.Object) *fake.FakeDynamicClient {
		return fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			adopt.ArtifactVersionGVR: "ArtifactVersionList",
			PackageManifestGVR:       "PackageManifestList",
			PodGVR:                   "PodList",
			DeploymentGVR:            "DeploymentList",
		}, objs...)
	}
	created := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		u.SetCreationTimestamp(metav1.Time{Time: old})
		return u
	}
	co := ObjectRef{Namespace: "cpaas-system", Name: "catalog-operator"}
	ctx := context.Background()

	client := mk(created(av("etcd.v0.9.4", "v0.9.4", true, presentSuccess, true)), packageManifest("0.9.3"),
		pod("platform-abc", map[string]any{CatalogSourceLabel: "platform"}), deployment("cpaas-system", "catalog-operator"))
	rs, err := RefreshWith(ctx, client, RefreshOptions{Namespace: "cpaas-system", Grace: 10 * time.Minute, Now: now, CatalogOperator: co})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Pod != "platform-abc" || rs[1].Deployment != "catalog-operator" || rs[1].Head != "etcd 0.9.3" || rs[1].Versions[0] != "etcd.v0.9.4" {
		t.Fatalf("%+v", rs)
	}
	d, _ := client.Resource(DeploymentGVR).Namespace("cpaas-system").Get(ctx, "catalog-operator", metav1.GetOptions{})
	if at, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "annotations", RestartedAtAnnotation); at != "2026-12-01T12:00:00Z" {
		t.Errorf("restartedAt %q", at)
	}
	if app, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "labels", "app"); app != "catalog-operator" {
		t.Errorf("the patch lost the template's labels: %v", d.Object)
	}
	var b bytes.Buffer
	PrintRestarted(&b, rs)
	if !strings.Contains(b.String(), "restarted deployment cpaas-system/catalog-operator (catalog-operator, rollout restart): upgrades [etcd.v0.9.4] Present but their PackageManifests still show etcd 0.9.3") {
		t.Errorf("%s", b.String())
	}

	// Not asked: the catalog pods only.
	client = mk(created(av("etcd.v0.9.4", "v0.9.4", true, presentSuccess, true)), packageManifest("0.9.3"), deployment("cpaas-system", "catalog-operator"))
	if rs, err := RefreshWith(ctx, client, RefreshOptions{Namespace: "cpaas-system", Grace: 10 * time.Minute, Now: now}); err != nil || len(rs) != 0 {
		t.Errorf("not asked: %+v %v", rs, err)
	}
	// Older than the head (a version added below it): not an upgrade.
	client = mk(created(av("etcd.v0.9.4", "v0.9.4", true, presentSuccess, true)), packageManifest("0.9.5"), deployment("cpaas-system", "catalog-operator"))
	if rs, err := RefreshWith(ctx, client, RefreshOptions{Namespace: "cpaas-system", Grace: 10 * time.Minute, Now: now, CatalogOperator: co}); err != nil || len(rs) != 0 {
		t.Errorf("below the head: %+v %v", rs, err)
	}
	// No such Deployment: an error naming the flag.
	client = mk(created(av("etcd.v0.9.4", "v0.9.4", true, presentSuccess, true)), packageManifest("0.9.3"))
	if _, err := RefreshWith(ctx, client, RefreshOptions{Namespace: "cpaas-system", Grace: 10 * time.Minute, Now: now, CatalogOperator: co}); err == nil || !strings.Contains(err.Error(), "no Deployment cpaas-system/catalog-operator (--refresh-catalog-operator") {
		t.Errorf("missing: %v", err)
	}
	if _, err := ParseObjectRef("catalog-operator"); err == nil {
		t.Error("ParseObjectRef without a namespace")
	}
}
