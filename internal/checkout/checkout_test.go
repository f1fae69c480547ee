package checkout

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSyncStaysInside: a link below a synced directory is removed, never
// followed; a link on the way to a directory or file is refused before
// anything changes; ".." and absolute paths are refused.
func TestSyncStaysInside(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "rendered/c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "rendered/c/away")); err != nil {
		t.Fatal(err)
	}
	if err := Sync(root, []string{"rendered/c"}, map[string][]byte{"rendered/c/a.yaml": []byte("a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "rendered/c/away")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link below the tree was kept: %v", err)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Errorf("the file the link pointed at is gone: %v", err)
	}

	if err := os.Symlink(outside, filepath.Join(root, "publish")); err != nil {
		t.Fatal(err)
	}
	var le *LinkError
	err := Sync(root, []string{"rendered/c"}, map[string][]byte{"rendered/c/a.yaml": []byte("b"), "publish/state/c.yaml": []byte("s")})
	if !errors.As(err, &le) || le.Path != "publish" || le.Target != outside {
		t.Fatalf("err = %v, want a *LinkError for publish", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "rendered/c/a.yaml")); string(b) != "a" {
		t.Errorf("something was written before the refusal: %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("outside holds %d entries", len(ents))
	}
	for _, p := range []string{"../x", "a/../../x", "/etc/x"} {
		if err := WriteFiles(root, map[string][]byte{p: nil}); err == nil {
			t.Errorf("WriteFiles(%q) was allowed", p)
		}
	}
}
