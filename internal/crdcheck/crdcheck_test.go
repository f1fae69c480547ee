package crdcheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/operator-publish/publish/internal/testenv"
)

// TestEmbeddedEqualShared keeps the CRDs built into the binary equal to the
// project's reference copies.
func TestEmbeddedEqualShared(t *testing.T) {
	shared := testenv.RequireShared(t)
	entries, _ := embedded.ReadDir("crds")
	if len(entries) != 3 {
		t.Fatalf("%d embedded CRDs, want 3", len(entries))
	}
	for _, e := range entries {
		got, _ := embedded.ReadFile("crds/" + e.Name())
		want, err := os.ReadFile(filepath.Join(shared, "crds", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from ../shared/crds: copy it again", e.Name())
		}
	}
}

func TestAlauda(t *testing.T) {
	v, err := Alauda()
	if err != nil {
		t.Fatal(err)
	}
	if !v.Knows("app.alauda.io/v1alpha1", "Artifact") || !v.Knows("app.alauda.io/v1alpha1", "ArtifactVersion") || v.Knows("v1", "ConfigMap") {
		t.Error("Knows")
	}
	ok := "apiVersion: app.alauda.io/v1alpha1\nkind: ArtifactVersion\nmetadata: {name: a.v1, namespace: ns}\nspec: {tag: v1, present: true}\n"
	if err := v.Validate([]byte(ok)); err != nil {
		t.Error(err)
	}
	bad := "apiVersion: app.alauda.io/v1alpha1\nkind: ArtifactVersion\nmetadata: {name: a.v1, namespace: ns}\nspec: {tag: v1, present: maybe}\n"
	if err := v.Validate([]byte(bad)); err == nil {
		t.Error("present: maybe accepted")
	}
}
