package catalog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/operator-publish/publish/internal/gitops"
)

// TestViewsAgreeOnLinks: a symbolic link committed in the catalog (to a
// file of the catalog, to a file outside the checkout, or a directory on
// the way) is no file to either view: Files leaves it out, and ReadFile
// says it does not exist, rather than read what it points to (Dir) or
// the link's target path as content (Tip).
func TestViewsAgreeOnLinks(t *testing.T) {
	bare := newBare(t)
	seed(t, bare, "main", catalogFiles())
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(outside, []byte("apiVersion: secret-value\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	run(t, ".", "clone", "-q", bare, wt)
	for link, target := range map[string]string{
		"publish/state/global.yaml": "../state.yaml",
		"publish/state/edge.yaml":   outside,
		"linked":                    "publish",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(wt, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(wt, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	run(t, wt, "add", "-A")
	run(t, wt, "commit", "-q", "-m", "links")
	run(t, wt, "push", "-q", "origin", "main")
	dir, err := OpenDir(wt)
	if err != nil {
		t.Fatal(err)
	}
	tip := openTip(t, gitops.Options{URL: bare})
	for _, v := range []View{dir, tip} {
		for _, p := range []string{"publish/state/global.yaml", "publish/state/edge.yaml", "linked/state.yaml"} {
			if data, ok, err := v.ReadFile(p); ok || err != nil {
				t.Errorf("%T: ReadFile(%s) of a link = %q, %v, %v; want it absent, as Files leaves it out", v, p, data, ok, err)
			}
		}
	}
}
