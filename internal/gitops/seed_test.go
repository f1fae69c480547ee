package gitops

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestSeedKeepsATree: seeding a catalog in memory keeps the user's files
// and keeps a tree Git can hold: a template file whose directory is a
// user file (a file named kustomize), or whose path is a user directory,
// is not added (Git would have to drop the user's file to hold both).
func TestSeedKeepsATree(t *testing.T) {
	tmpl := fstest.MapFS{
		"tmpl/README.md":               {Data: []byte("template readme\n")},
		"tmpl/kustomize/a.yaml":        {Data: []byte("a: 1\n")},
		"tmpl/kustomize/b/b.yaml":      {Data: []byte("b: 1\n")},
		"tmpl/flux/kustomization.yaml": {Data: []byte("f: 1\n")},
	}
	files := map[string][]byte{
		"kustomize":       []byte("a script of mine\n"),
		"README.md/notes": []byte("a directory of mine\n"),
		"flux/mine.yaml":  []byte("mine\n"),
	}
	if err := Seed(files, tmpl, "tmpl"); err != nil {
		t.Fatal(err)
	}
	if string(files["kustomize"]) != "a script of mine\n" || string(files["README.md/notes"]) != "a directory of mine\n" {
		t.Errorf("Seed changed the user's files: %q %q", files["kustomize"], files["README.md/notes"])
	}
	for p := range files {
		for q := range files {
			if strings.HasPrefix(q, p+"/") {
				t.Errorf("after Seed, %s is a file and the directory of %s", p, q)
			}
		}
	}
	if _, ok := files["flux/kustomization.yaml"]; !ok {
		t.Error("Seed did not add a template file beside the user's")
	}
}
