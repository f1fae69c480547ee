package crdcheck

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/testenv"
)

// TestEmbeddedEqualShared keeps the CRDs built into the binary equal to the
// project's reference copies in ../shared/crds. The ChartRepo CRD has no
// copy there: it is the project's own copy of ACP's (OwnFiles).
func TestEmbeddedEqualShared(t *testing.T) {
	shared := testenv.RequireShared(t)
	entries, _ := embedded.ReadDir("crds")
	if len(entries) != 4 {
		t.Fatalf("%d embedded CRDs, want 4", len(entries))
	}
	own := map[string]bool{}
	for _, f := range OwnFiles {
		own[f] = true
	}
	for _, e := range entries {
		if own[e.Name()] {
			continue
		}
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
	if !v.Knows("app.alauda.io/v1alpha1", "Artifact") || !v.Knows("app.alauda.io/v1alpha1", "ArtifactVersion") || !v.Knows("app.alauda.io/v1beta1", "ChartRepo") || v.Knows("v1", "ConfigMap") {
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

// TestObjectError: an Artifact with schema violations (one in a list
// item), unknown fields and no name gives an *ObjectError naming each
// field by its path from the root, whose text is the one Validate has
// always given.
func TestObjectError(t *testing.T) {
	v, err := Alauda()
	if err != nil {
		t.Fatal(err)
	}
	bad := "apiVersion: app.alauda.io/v1alpha1\nkind: Artifact\nmetadata: {namespace: ns}\nspec: {present: maybe, bogus: 1, artifactVersionSelector: {}, tagPatterns: [{name: 1, regex: x, maxQuantity: 1, extra: 2}]}\n"
	err = v.Validate([]byte(bad))
	var oe *ObjectError
	if !errors.As(err, &oe) {
		t.Fatalf("Validate: %T %v, want *ObjectError", err, err)
	}
	if oe.Kind != "Artifact" || oe.Name != "" {
		t.Errorf("Kind %q Name %q", oe.Kind, oe.Name)
	}
	var got []string
	for _, f := range oe.Fields {
		got = append(got, f.Field)
	}
	want := []string{"spec.present", "spec.registry", "spec.repository", "spec.tagPatterns[0].name", "spec.type", "metadata.name", "spec.bogus", "spec.tagPatterns[0].extra"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("fields %q, want %q", got, want)
	}
	if oe.Fields[0].Message != `Invalid value: "string": spec.present in body must be of type boolean: "string"` || oe.Fields[1].Message != "Required value" || oe.Fields[6].Message != "unknown field (the API server would drop it)" {
		t.Errorf("messages %+v", oe.Fields)
	}
	text := `Artifact <nil>: [].spec.present: Invalid value: "string": spec.present in body must be of type boolean: "string"; ` +
		`[].spec.registry: Required value; [].spec.repository: Required value; ` +
		`[].spec.tagPatterns[0].name: Invalid value: "number": spec.tagPatterns[0].name in body must be of type string: "number"; ` +
		`[].spec.type: Required value; metadata.name: required; ` +
		`spec.bogus: unknown field (the API server would drop it); spec.tagPatterns[0].extra: unknown field (the API server would drop it)`
	if err.Error() != text {
		t.Errorf("text\n%s\nwant\n%s", err, text)
	}

	named := &ObjectError{Kind: "Library", Name: "lib", Fields: []FieldError{{Field: "metadata.namespace", Message: "required for a namespaced kind"}}}
	if s := named.Error(); s != "Library lib: metadata.namespace: required for a namespaced kind" {
		t.Errorf("built ObjectError: %q", s)
	}
	if err := v.Validate([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")); err == nil || errors.As(err, &oe) {
		t.Errorf("unknown kind: %v, want a plain error", err)
	}
}
