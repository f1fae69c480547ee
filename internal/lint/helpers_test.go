package lint

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of internal/lint/testdata")

// golden compares got with the file path, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/lint/ -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run go test ./internal/lint/ -update to accept):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}
