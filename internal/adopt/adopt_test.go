package adopt

import (
	"bytes"
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/fake"
)

func obj(kind, name, uid string, labels map[string]string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("app.alauda.io/v1alpha1")
	u.SetKind(kind)
	u.SetNamespace("cpaas-system")
	u.SetName(name)
	u.SetUID(types.UID(uid))
	u.SetLabels(labels)
	u.SetOwnerReferences(owners)
	return u
}

func owner(name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "app.alauda.io/v1alpha1", Kind: "Artifact", Name: name, UID: types.UID(uid)}
}

// TestRun covers each case once: no owner, already owned, a stale uid, an
// owner of another kind kept, an orphan, no label; then a second run
// writes nothing.
func TestRun(t *testing.T) {
	lbl := func(a string) map[string]string { return map[string]string{VersionLabel: a} }
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keep", UID: "cm-1"}
	scheme := runtime.NewScheme()
	client := fake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		ArtifactGVR:        "ArtifactList",
		ArtifactVersionGVR: "ArtifactVersionList",
	},
		obj("Artifact", "etcd", "uid-etcd", nil),
		obj("Artifact", "tiny", "uid-tiny", nil),
		obj("ArtifactVersion", "etcd.v0.9.4", "", lbl("etcd")),
		obj("ArtifactVersion", "etcd.v0.9.2", "", lbl("etcd"), owner("etcd", "uid-etcd")),
		obj("ArtifactVersion", "tiny.v1.0.0", "", lbl("tiny"), owner("tiny", "uid-old"), other),
		obj("ArtifactVersion", "gone.v1.0.0", "", lbl("gone")),
		obj("ArtifactVersion", "stray", "", nil),
	)
	ctx := context.Background()
	res, err := Run(ctx, client, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Outcome{"etcd.v0.9.4": Adopted, "etcd.v0.9.2": Owned, "tiny.v1.0.0": Adopted, "gone.v1.0.0": Orphan, "stray": Unlabelled}
	for _, it := range res.Items {
		if want[it.Name] != it.Outcome {
			t.Errorf("%s: %s, want %s", it.Name, it.Outcome, want[it.Name])
		}
	}
	get := func(name string) []metav1.OwnerReference {
		u, err := client.Resource(ArtifactVersionGVR).Namespace("cpaas-system").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u.GetOwnerReferences()
	}
	if refs := get("etcd.v0.9.4"); len(refs) != 1 || refs[0] != owner("etcd", "uid-etcd") {
		t.Errorf("etcd.v0.9.4 owners %v", refs)
	}
	if refs := get("tiny.v1.0.0"); len(refs) != 2 || refs[0] != other || refs[1] != owner("tiny", "uid-tiny") {
		t.Errorf("tiny.v1.0.0 owners %v: want the ConfigMap kept and the stale Artifact uid replaced", refs)
	}
	var out bytes.Buffer
	res.Print(&out, "cpaas-system", false)
	if !strings.Contains(out.String(), "5 ArtifactVersions in cpaas-system: 2 adopted, 1 already owned, 1 orphans, 1 unlabelled, 0 failed") {
		t.Errorf("summary:\n%s", out.String())
	}

	// Idempotent: nothing is written the second time.
	n := len(client.Actions())
	res, err = Run(ctx, client, Options{})
	if err != nil || res.Count(Adopted) != 0 || res.Count(Owned) != 3 {
		t.Fatalf("second run: %v, %d adopted, %d owned", err, res.Count(Adopted), res.Count(Owned))
	}
	for _, a := range client.Actions()[n:] {
		if a.GetVerb() != "list" {
			t.Errorf("second run wrote: %s %s", a.GetVerb(), a.GetResource())
		}
	}
}
