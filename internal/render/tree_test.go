package render

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/checkout"
)

// walkKey is the render key as it was computed over a checkout before the
// render moved into memory: filepath.WalkDir over root, .git, rendered/ and
// publish/ left out, regular files only. Keys recorded in catalogs were
// made this way.
func walkKey(t *testing.T, root, cluster string, cfg Config) string {
	t.Helper()
	h := sha256.New()
	fmt.Fprintf(h, "render-key/v1\x00%s\x00%s\x00%s\x00%s\x00", cluster, cfg.Namespace, cfg.Library, strings.Join(cfg.ImagePullSecrets, ","))
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" || rel == RenderedDir || rel == "publish" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(data))
		h.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// TestKeyInMemoryEqualsCheckout: the render key of a catalog in memory is
// the key a walk of its checkout gives, for names that sort differently as
// whole paths and name by name ("a.txt" before "a/b" as strings, after it
// in a walk), with rendered/, publish/ and links left out: keys recorded
// by earlier publishes stay valid.
func TestKeyInMemoryEqualsCheckout(t *testing.T) {
	root := t.TempDir()
	files := Files{
		"a.txt": []byte("1"), "a/b": []byte("2"), "a-b/c": []byte("3"), "a/b.d/e": []byte("4"), "a/b-c": []byte("5"),
		"kustomize/clusters/global/kustomization.yaml":     []byte("resources:\n- ../../../publish/generated/global\n"),
		"kustomize/clusters/global/patch.yaml":             []byte("x: y\n"),
		"kustomize/clusters/global.old/kustomization.yaml": []byte("resources: []\n"),
		"rendered/global/x/a.yaml":                         []byte("skipped"),
		"publish/state/global.yaml":                        []byte("skipped"),
		"publisher/kept":                                   []byte("kept"),
		"README.md":                                        []byte("# catalog\n"),
	}
	if err := checkout.WriteFiles(root, files); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("README.md", filepath.Join(root, "link.md")); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Namespace: "ns", Library: "lib", ImagePullSecrets: []string{"a", "b"}}
	want := walkKey(t, root, "global", cfg)
	if got := Key(files, "global", cfg); got != want {
		t.Errorf("Key of the files in memory = %s, the walk of their checkout gives %s", got, want)
	}
	read, err := ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := Key(read, "global", cfg); got != want {
		t.Errorf("Key of the checkout read into memory = %s, want %s", got, want)
	}
	files["kustomize/clusters/global/patch.yaml"] = []byte("x: z\n")
	if Key(files, "global", cfg) == want {
		t.Error("an overlay edit left the key unchanged")
	}
}

// TestSyncDir: what a render changed in memory is written back to the
// checkout: new and changed files written, files gone removed with the
// directories they leave empty, nothing else touched; a symbolic link on
// the way is refused before anything changes.
func TestSyncDir(t *testing.T) {
	root := t.TempDir()
	base := Files{"keep.txt": []byte("k"), "rendered/c/a/x.yaml": []byte("1"), "rendered/c/b/y.yaml": []byte("2"), "rendered/c/b/z.yaml": []byte("3")}
	if err := checkout.WriteFiles(root, base); err != nil {
		t.Fatal(err)
	}
	now := base.Clone()
	delete(now, "rendered/c/a/x.yaml")
	delete(now, "rendered/c/b/y.yaml")
	now["rendered/c/b/z.yaml"] = []byte("changed")
	now["rendered/c/d/w.yaml"] = []byte("new")
	if err := SyncDir(root, base, now); err != nil {
		t.Fatal(err)
	}
	got, err := ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Changes(now)) != 0 {
		t.Errorf("checkout after SyncDir differs from the render: %v", got.Changes(now))
	}
	if _, err := os.Stat(filepath.Join(root, "rendered/c/a")); !os.IsNotExist(err) {
		t.Errorf("rendered/c/a left behind empty: %v", err)
	}
	// A link in the way: refused, and nothing written.
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "rendered/c/e")); err != nil {
		t.Fatal(err)
	}
	next := now.Clone()
	next["keep.txt"] = []byte("touched")
	next["rendered/c/e/v.yaml"] = []byte("through the link")
	var le *checkout.LinkError
	if err := SyncDir(root, now, next); err == nil || !errors.As(err, &le) {
		t.Fatalf("SyncDir through a link: %v, want a *checkout.LinkError", err)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "keep.txt")); string(data) != "k" {
		t.Errorf("keep.txt was written before the link was refused: %q", data)
	}
}

// TestReplaceKeepsATree: a file where a replaced directory, or a directory
// on the way to a new file, must be goes, as a checkout would replace it.
func TestReplaceKeepsATree(t *testing.T) {
	cat := Files{"rendered/c": []byte("a file"), "publish/generated": []byte("a file too"), "keep": []byte("k"), "rendered/d/x": []byte("x")}
	cat.Replace([]string{"rendered/c"}, Files{"rendered/c/a/o.yaml": []byte("o"), "publish/generated/c/k.yaml": []byte("k")})
	want := Files{"rendered/c/a/o.yaml": []byte("o"), "publish/generated/c/k.yaml": []byte("k"), "keep": []byte("k"), "rendered/d/x": []byte("x")}
	if ch := cat.Changes(want); len(ch) != 0 {
		t.Errorf("after Replace: %v differ", ch)
	}
}
