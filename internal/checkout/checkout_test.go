package checkout

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
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

// TestApplyOddEntries: Apply replaces a regular file removed where a
// directory is written, and a directory emptied where a file is written;
// it refuses, before changing anything, a named pipe or a directory that
// keeps a file where a file is written and a file that stays where a
// directory is (*KindError); below clean, a link (never followed) and a
// pipe go.
func TestApplyOddEntries(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write := func(p, data string) {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("r/a", "a file where a directory goes")
	write("r/b/x", "a file below a directory where a file goes")
	write("keep", "k")
	if err := os.WriteFile(filepath.Join(outside, "target"), []byte("t"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "target"), filepath.Join(root, "r/link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "r/pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ke *KindError
	for _, tc := range []struct {
		name    string
		writes  map[string][]byte
		removes []string
		at      string
	}{
		{"pipe at a file", map[string][]byte{"keep": []byte("x"), "r/pipe": []byte("p")}, nil, "r/pipe"},
		{"file kept on the way", map[string][]byte{"keep": []byte("x"), "r/a/y": []byte("y")}, nil, "r/a"},
		{"directory kept at a file", map[string][]byte{"keep": []byte("x"), "r/b": []byte("b")}, nil, "r/b"},
	} {
		if err := Apply(root, tc.writes, tc.removes, nil); !errors.As(err, &ke) || ke.Path != tc.at {
			t.Errorf("%s: %v, want a *KindError at %s", tc.name, err, tc.at)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "keep")); string(b) != "k" {
			t.Fatalf("%s: keep was written before the refusal", tc.name)
		}
	}
	err := Apply(root, map[string][]byte{"r/a/y": []byte("y"), "r/b": []byte("b")}, []string{"r/a", "r/b/x"}, []string{"r"})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"r/a/y": "y", "r/b": "b", "keep": "k"} {
		if b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p))); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
	for _, p := range []string{"r/link", "r/pipe"} {
		if _, err := os.Lstat(filepath.Join(root, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left below clean: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "target")); err != nil {
		t.Errorf("the link's target: %v", err)
	}
}
