package importer

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/operator-publish/publish/internal/adopt"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
)

// violetArtifact and violetVersion are objects as violet creates them:
// the Artifact with its selector and library label, each ArtifactVersion
// labelled for its Artifact and owned by it, named <artifact>-<tag>.
func violetArtifact(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": render.APIVersion, "kind": "Artifact",
		"metadata": map[string]any{"name": name, "namespace": "cpaas-system", "uid": "uid-" + name,
			"labels": map[string]any{render.LabelLibrary: "platform"}},
		"spec": map[string]any{"type": "bundle", "present": true, "registry": "registry.example.com", "repository": "platform/" + name + "-bundle",
			"displayName": "Etcd", "artifactVersionSelector": map[string]any{"matchLabels": map[string]any{adopt.VersionLabel: name}}},
	}}
}

func violetVersion(art, name, tag, phase string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": render.APIVersion, "kind": "ArtifactVersion",
		"metadata": map[string]any{"name": name, "namespace": "cpaas-system",
			"labels": map[string]any{adopt.VersionLabel: art, render.LabelLibrary: "platform"}},
		"spec": map[string]any{"tag": tag, "present": true},
	}}
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: render.APIVersion, Kind: "Artifact", Name: art, UID: types.UID("uid-" + art)}})
	if phase != "" {
		u.Object["status"] = map[string]any{"phase": phase, "version": strings.TrimPrefix(tag, "v")}
	}
	return u
}

func fakeClient(objs ...runtime.Object) *fake.FakeDynamicClient {
	return fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		adopt.ArtifactGVR:        "ArtifactList",
		adopt.ArtifactVersionGVR: "ArtifactVersionList",
	}, objs...)
}

// TestPlan: violet's objects become state entries recording every
// ArtifactVersion name; a rendered catalog of them names the same
// objects; the client only lists.
func TestPlan(t *testing.T) {
	client := fakeClient(violetArtifact("etcd"),
		violetVersion("etcd", "etcd-v0.9.2", "v0.9.2", "Present"),
		violetVersion("etcd", "etcd-v0.9.4", "v0.9.4", "Present"),
		violetVersion("gone", "gone-v1.0.0", "v1.0.0", "Present"),
	)
	f, err := Read(context.Background(), client, "cpaas-system")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("import %s %s: it may only list", a.GetVerb(), a.GetResource())
		}
	}
	p := MakePlan(f, nil, Options{})
	if len(p.Conflicts) != 0 || len(p.Artifacts) != 1 {
		t.Fatalf("%+v", p)
	}
	a := p.Artifacts[0]
	if a.Name != "etcd" || !a.Present || a.Registry != "registry.example.com" || a.Repository != "platform/etcd-bundle" || a.DisplayName != "Etcd" || len(a.Versions) != 2 {
		t.Fatalf("%+v", a)
	}
	if v := a.Versions[1]; v.Version != "0.9.4" || v.Tag != "v0.9.4" || v.ObjectName != "etcd-v0.9.4" || !v.Present {
		t.Errorf("%+v", v)
	}
	var names []string
	for _, o := range render.Objects(render.Config{}, p.Artifacts) {
		names = append(names, o["metadata"].(render.Object)["name"].(string))
	}
	if strings.Join(names, " ") != "etcd etcd-v0.9.2 etcd-v0.9.4" {
		t.Errorf("rendered names %v", names)
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "gone-v1.0.0 name Artifact gone, which is not in namespace cpaas-system") {
		t.Errorf("notes %v", p.Notes)
	}
	var b bytes.Buffer
	p.Print(&b, true)
	if !strings.Contains(b.String(), "would import Artifact etcd (listed, registry.example.com/platform/etcd-bundle)") || !strings.Contains(b.String(), "etcd 0.9.4 tag v0.9.4 as ArtifactVersion etcd-v0.9.4 (listed)") {
		t.Errorf("%s", b.String())
	}

	// The same artifact in the state with the same objects: known.
	p2 := MakePlan(f, p.Artifacts, Options{})
	if len(p2.Artifacts) != 0 || len(p2.Known) != 1 || len(p2.Conflicts) != 0 {
		t.Errorf("again: %+v", p2)
	}
	// In the state as publish named it (etcd.v0.9.4): a conflict.
	published := []model.ArtifactRecord{{Name: "etcd", Present: true, Registry: "registry.example.com", Repository: "platform/etcd-bundle",
		Versions: []model.VersionRecord{{Version: "0.9.4", Tag: "v0.9.4", Present: true}}}}
	p3 := MakePlan(f, published, Options{})
	if len(p3.Conflicts) != 1 || !strings.Contains(p3.Conflicts[0].Problem, "tag v0.9.4 is ArtifactVersion etcd-v0.9.4 in the cluster, etcd.v0.9.4 in the catalog") {
		t.Errorf("published: %+v", p3.Conflicts)
	}
	// Another library: a note.
	p4 := MakePlan(f, nil, Options{Render: render.Config{Library: "team"}})
	if !strings.Contains(strings.Join(p4.Notes, "\n"), `label cpaas.io/library="platform", the catalog renders "team"`) {
		t.Errorf("library: %v", p4.Notes)
	}
}

// TestDuplicate: two ArtifactVersions of one version (AlreadyAdd) are a
// conflict naming the holder and the kubectl command for the other.
func TestDuplicate(t *testing.T) {
	client := fakeClient(violetArtifact("etcd"),
		violetVersion("etcd", "etcd-v0.9.4", "v0.9.4", "Present"),
		violetVersion("etcd", "etcd-v0.9.4-again", "0.9.4", "Pending"),
	)
	f, err := Read(context.Background(), client, "cpaas-system")
	if err != nil {
		t.Fatal(err)
	}
	p := MakePlan(f, nil, Options{})
	if len(p.Artifacts) != 0 || len(p.Conflicts) != 1 {
		t.Fatalf("%+v", p)
	}
	c := p.Conflicts[0]
	if c.Version != "0.9.4" || !strings.Contains(c.Action, "etcd-v0.9.4 holds it: delete the others (kubectl -n cpaas-system delete artifactversion etcd-v0.9.4-again)") {
		t.Errorf("%s", c)
	}
	if err := (&ConflictError{p.Conflicts}); !strings.Contains(err.Error(), "1 conflicts in the cluster, nothing imported") {
		t.Errorf("%v", err)
	}
}

// TestReadForbidden: a refusal names the permission.
func TestReadForbidden(t *testing.T) {
	client := fakeClient()
	client.PrependReactor("list", "artifacts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(adopt.ArtifactGVR.GroupResource(), "", errors.New("no"))
	})
	_, err := Read(context.Background(), client, "cpaas-system")
	var re *ReadError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "needs get and list on artifacts.app.alauda.io") {
		t.Errorf("%v", err)
	}
}
