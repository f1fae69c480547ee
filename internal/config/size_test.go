package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/manifest"
)

// TestLoadCapped: a publish.yaml over the cap of a manifest file is
// refused without being read whole; a directory in its place is refused.
func TestLoadCapped(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, FileName)
	big := "apiVersion: " + APIVersion + "\nkind: " + Kind + "\n# " + strings.Repeat("x", manifest.MaxFileSize) + "\n"
	if err := os.WriteFile(p, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, false); err == nil || !strings.Contains(err.Error(), "the limit of publish.yaml") {
		t.Errorf("Load of %d bytes: %v", len(big), err)
	}
	d := filepath.Join(dir, "sub", FileName)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(d, false); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Load of a directory: %v", err)
	}
	if c, err := Load(filepath.Join(dir, "none.yaml"), false); c != nil || err != nil {
		t.Errorf("a missing optional file: %v %v", c, err)
	}
}
