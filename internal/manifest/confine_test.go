package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanStaysBelowSource: a packages directory that climbs out of the
// package repo (packagesDir: ../.., an absolute path elsewhere, a link to
// elsewhere) is refused before anything is read; one below it is read.
func TestScanStaysBelowSource(t *testing.T) {
	top := t.TempDir()
	source := filepath.Join(top, "repo")
	other := filepath.Join(top, "other", "packages", "x", "1.0.0")
	for _, d := range []string{filepath.Join(source, "packages"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(other, FileName), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(top, "other"), filepath.Join(source, "linked")); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{
		filepath.Join(source, "..", ".."),
		filepath.Join(source, "..", "other"),
		filepath.Join(top, "other"),
		filepath.Join(source, "linked"),
	} {
		ms, err := Scan(source, root)
		if err == nil || !strings.Contains(err.Error(), "is outside --source") || len(ms) != 0 {
			t.Errorf("Scan(%s) = %d manifests, %v; want it refused as outside --source", root, len(ms), err)
		}
	}
	if _, err := Scan(source, filepath.Join(source, "packages")); err != nil {
		t.Errorf("packages below --source: %v", err)
	}
}
