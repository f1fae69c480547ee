package status

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/operator-publish/publish/internal/adopt"
)

func av(name, tag string, present bool, st map[string]any, owned bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "app.alauda.io/v1alpha1", "kind": "ArtifactVersion",
		"metadata": map[string]any{"name": name, "namespace": "cpaas-system",
			"labels": map[string]any{adopt.VersionLabel: "etcd"}},
		"spec": map[string]any{"tag": tag, "present": present},
	}}
	if st != nil {
		u.Object["status"] = st
	}
	if owned {
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "app.alauda.io/v1alpha1", Kind: "Artifact", Name: "etcd", UID: "u1"}})
	}
	return u
}

// packageManifest has the shape OLM's package server serves
// (packages.operators.coreos.com/v1 PackageManifest: status.catalogSource,
// packageName, defaultChannel, channels[] with currentCSV, currentCSVDesc
// and entries[] of name and version). Not checked against a real package
// server, which cannot run here.
func packageManifest(versions ...string) *unstructured.Unstructured {
	var entries []any
	for _, v := range versions {
		entries = append(entries, map[string]any{"name": "etcdoperator.v" + v, "version": v})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "packages.operators.coreos.com/v1", "kind": "PackageManifest",
		"metadata": map[string]any{"name": "etcd", "namespace": "cpaas-system", "labels": map[string]any{"catalog": "platform"}},
		"status": map[string]any{
			"catalogSource": "platform", "catalogSourceNamespace": "cpaas-system", "packageName": "etcd", "defaultChannel": "alpha",
			"channels": []any{map[string]any{
				"name": "alpha", "currentCSV": "etcdoperator.v" + versions[0],
				"currentCSVDesc": map[string]any{"displayName": "etcd", "version": versions[0]},
				"entries":        entries,
			}},
		},
	}}
}

func fakeClient(objs ...runtime.Object) *fake.FakeDynamicClient {
	return fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		adopt.ArtifactGVR:        "ArtifactList",
		adopt.ArtifactVersionGVR: "ArtifactVersionList",
		PackageManifestGVR:       "PackageManifestList",
		CatalogSourceGVR:         "CatalogSourceList",
		ClusterCatalogGVR:        "ClusterCatalogList",
	}, objs...)
}

var (
	presentSuccess = map[string]any{"phase": "Present", "reason": "Success", "message": "", "version": "0.9.4"}
	alreadyAdd     = map[string]any{"phase": "Pending", "reason": "AlreadyAdd", "message": "", "version": "0.9.4"}
)

// TestCheck covers each outcome of a version: as asked and listed in the
// PackageManifest, Present but not listed, AlreadyAdd with its rival, not
// synced yet, not adopted yet, delisted.
func TestCheck(t *testing.T) {
	asked := &Asked{Versions: []*unstructured.Unstructured{
		av("etcd.v0.9.4", "v0.9.4", true, nil, false),
		av("etcd.v0.9.5", "v0.9.5", true, nil, false),
		av("etcd.0.9.4-copy", "0.9.4", true, nil, false),
		av("etcd.v1.0.0", "v1.0.0", true, nil, false),
		av("etcd.v0.9.6", "v0.9.6", true, nil, false),
		av("etcd.v0.9.2", "v0.9.2", false, nil, false),
	}}
	client := fakeClient(
		av("etcd.v0.9.4", "v0.9.4", true, presentSuccess, true),
		av("etcd.v0.9.5", "v0.9.5", true, map[string]any{"phase": "Present", "reason": "Success", "version": "0.9.5"}, true),
		av("etcd.0.9.4-copy", "0.9.4", true, alreadyAdd, true),
		av("etcd.v0.9.6", "v0.9.6", true, map[string]any{"phase": "Pending"}, false),
		av("etcd.v0.9.2", "v0.9.2", false, map[string]any{"phase": "Deleted", "version": "0.9.2"}, true),
		packageManifest("0.9.4", "0.9.3"),
	)
	rep, err := Check(context.Background(), client, "global", asked)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Version{}
	for _, v := range rep.Versions {
		got[v.Name] = v
	}
	want := map[string]State{"etcd.v0.9.4": AsAsked, "etcd.v0.9.5": Waiting, "etcd.0.9.4-copy": Failed, "etcd.v1.0.0": Waiting, "etcd.v0.9.6": Waiting, "etcd.v0.9.2": AsAsked}
	for name, s := range want {
		if got[name].State != s {
			t.Errorf("%s: %s (%s), want %s", name, got[name].State, got[name].Action, s)
		}
	}
	if v := got["etcd.v0.9.4"]; v.Listed == nil || !*v.Listed {
		t.Errorf("etcd.v0.9.4 not found in the PackageManifest: %+v", v)
	}
	if v := got["etcd.v0.9.5"]; v.Listed == nil || *v.Listed || !strings.Contains(v.Action, "PackageManifest etcd does not list it") {
		t.Errorf("etcd.v0.9.5: %+v", v)
	}
	if v := got["etcd.0.9.4-copy"]; v.Rival != "etcd.v0.9.4" || !strings.Contains(v.Action, "kubectl -n cpaas-system delete artifactversion etcd.v0.9.4") {
		t.Errorf("AlreadyAdd: rival %q, action %q", v.Rival, v.Action)
	}
	if v := got["etcd.v1.0.0"]; v.InCluster || !strings.Contains(v.Action, "synced") {
		t.Errorf("etcd.v1.0.0: %+v", v)
	}
	if v := got["etcd.v0.9.6"]; !strings.Contains(v.Action, "publish adopt") {
		t.Errorf("etcd.v0.9.6: %+v", v)
	}
	if !rep.PackageManifests || rep.Done() || rep.Count(Failed) != 1 {
		t.Errorf("report: %+v", rep)
	}

	for _, f := range []string{FormatText, FormatMarkdown, FormatJSON} {
		var b bytes.Buffer
		if err := rep.Print(&b, f); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.Contains(out, "etcd.v0.9.4") || !strings.Contains(out, "2 as asked, 3 waiting, 1 failed of 6") && f != FormatJSON {
			t.Errorf("%s output:\n%s", f, out)
		}
		if f == FormatJSON {
			var back Report
			if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Versions) != 6 || back.Versions[0].Rival != "etcd.v0.9.4" {
				t.Errorf("JSON: %v\n%s", err, out)
			}
		}
		if f == FormatMarkdown && !strings.Contains(out, "| failed | cpaas-system | etcd | `etcd.0.9.4-copy` |") {
			t.Errorf("markdown:\n%s", out)
		}
	}
	if err := rep.Print(&bytes.Buffer{}, "yaml"); err == nil {
		t.Error("format yaml accepted")
	}
}

// TestNoPackageServer: a cluster that serves no PackageManifests is
// reported as such, the versions judged by their phase alone.
func TestNoPackageServer(t *testing.T) {
	client := fakeClient(av("etcd.v0.9.4", "v0.9.4", true, presentSuccess, true))
	client.PrependReactor("list", "packagemanifests", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(PackageManifestGVR.GroupResource(), "")
	})
	rep, err := Check(context.Background(), client, "global", &Asked{Versions: []*unstructured.Unstructured{av("etcd.v0.9.4", "v0.9.4", true, nil, false)}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.PackageManifests || !rep.Done() || rep.Versions[0].Listed != nil {
		t.Errorf("%+v", rep)
	}
	var b bytes.Buffer
	rep.Print(&b, FormatText)
	if !strings.Contains(b.String(), "serves no PackageManifests") {
		t.Errorf("text:\n%s", b.String())
	}
}

// TestForbidden: a refused list names the permission.
func TestForbidden(t *testing.T) {
	client := fakeClient()
	client.PrependReactor("list", "artifactversions", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(adopt.ArtifactVersionGVR.GroupResource(), "", errors.New("no"))
	})
	_, err := Check(context.Background(), client, "global", &Asked{Versions: []*unstructured.Unstructured{av("etcd.v0.9.4", "v0.9.4", true, nil, false)}})
	if err == nil || !strings.Contains(err.Error(), "get, list and watch") {
		t.Errorf("%v", err)
	}
}

// TestCatalogs: a CatalogSource READY and a ClusterCatalog not yet Serving.
func TestCatalogs(t *testing.T) {
	cs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
		"metadata": map[string]any{"name": "ops", "namespace": "olm"},
		"status":   map[string]any{"connectionState": map[string]any{"lastObservedState": "READY"}},
	}}
	cc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
		"metadata": map[string]any{"name": "ops"},
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Serving", "status": "False", "reason": "Unavailable", "message": "unpacking"}}},
	}}
	client := fakeClient(cs, cc)
	rep, err := Check(context.Background(), client, "olm", &Asked{Catalogs: []*unstructured.Unstructured{cs, cc}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Catalogs[0].State != AsAsked || rep.Catalogs[1].State != Waiting {
		t.Errorf("%+v", rep.Catalogs)
	}
}

// TestReadRendered: the ArtifactVersions of a rendered directory, an
// empty one refused, a broken file named.
func TestReadRendered(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "etcd"), 0o755)
	os.WriteFile(filepath.Join(dir, "etcd", "artifact.yaml"), []byte("apiVersion: app.alauda.io/v1alpha1\nkind: Artifact\nmetadata: {name: etcd, namespace: cpaas-system}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "etcd", "versions.yaml"), []byte("apiVersion: app.alauda.io/v1alpha1\nkind: ArtifactVersion\nmetadata: {name: etcd.v1, namespace: cpaas-system}\nspec: {tag: v1, present: true}\n---\napiVersion: app.alauda.io/v1alpha1\nkind: ArtifactVersion\nmetadata: {name: etcd.v2}\nspec: {tag: v2, present: true}\n"), 0o644)
	a, err := ReadRendered(dir)
	if err != nil || len(a.Versions) != 2 || a.Versions[1].GetNamespace() != "cpaas-system" {
		t.Fatalf("%v %+v", err, a)
	}
	if _, err := ReadRendered(t.TempDir()); err == nil || !strings.Contains(err.Error(), "--cluster") {
		t.Errorf("empty: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("a: [\n"), 0o644)
	if _, err := ReadRendered(dir); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("bad: %v", err)
	}
}

// TestWait: a version that becomes Present while Wait watches ends the
// wait; the change arrives through the watch Wait opened (a fake watcher
// that delivers the update the "platform" makes once it is open).
func TestWait(t *testing.T) {
	client := fakeClient(av("etcd.v0.9.4", "v0.9.4", true, map[string]any{"phase": "Pending"}, true))
	asked := &Asked{Versions: []*unstructured.Unstructured{av("etcd.v0.9.4", "v0.9.4", true, nil, false)}}
	client.PrependReactor("list", "packagemanifests", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(PackageManifestGVR.GroupResource(), "")
	})
	ctx := context.Background()
	watches := 0
	client.PrependWatchReactor("artifactversions", func(k8stesting.Action) (bool, watch.Interface, error) {
		watches++
		fw := watch.NewFake()
		go func() {
			u := av("etcd.v0.9.4", "v0.9.4", true, presentSuccess, true)
			if _, err := client.Resource(adopt.ArtifactVersionGVR).Namespace("cpaas-system").UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
			}
			fw.Modify(u)
		}()
		return true, fw, nil
	})
	checks := 0
	rep, err := Wait(ctx, client, "global", asked, func(*Report) { checks++ })
	if err != nil || !rep.Done() || checks != 2 || watches != 1 {
		t.Fatalf("%v, done %v, %d checks, %d watches", err, rep != nil && rep.Done(), checks, watches)
	}

	// A deadline with the version still waiting: TimedOut, naming it.
	client = fakeClient(av("etcd.v0.9.4", "v0.9.4", true, map[string]any{"phase": "Pending"}, true))
	client.PrependReactor("list", "packagemanifests", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(PackageManifestGVR.GroupResource(), "")
	})
	cctx, cancel := context.WithCancel(ctx)
	client.PrependWatchReactor("artifactversions", func(k8stesting.Action) (bool, watch.Interface, error) {
		cancel() // as the --wait deadline would, while watching
		return true, watch.NewFake(), nil
	})
	_, err = Wait(cctx, client, "global", asked, nil)
	var nae *NotAsAskedError
	if !errors.As(err, &nae) || !nae.TimedOut || !strings.Contains(err.Error(), "cpaas-system/etcd.v0.9.4 (waiting)") {
		t.Fatalf("%v", err)
	}
}
