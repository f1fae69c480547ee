package bundle_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/bundle"
)

// TestLoadRelease loads a CSV's spec.release as opm v1.73.0 reads it
// (pkg/registry/csv.go GetRelease): text as written, a whole number as
// "%d", another number as "%g"; operator-framework/api, which takes text
// only, loads the bundle all the same. A release api refuses (a leading
// zero) is a bundle error naming the field.
func TestLoadRelease(t *testing.T) {
	for _, tc := range []struct{ yaml, want, err string }{
		{"", "", ""},
		{"2", "2", ""},
		{"2.10", "2.1", ""},
		{`"rc.1"`, "rc.1", ""},
		{"'3'", "3", ""},
		{`"01"`, "", "spec.release"},
	} {
		dir := copyDir(t, demoDir)
		csvPath := filepath.Join(dir, "manifests", "demo-operator.clusterserviceversion.yaml")
		data, err := os.ReadFile(csvPath)
		if err != nil {
			t.Fatal(err)
		}
		if tc.yaml != "" {
			data = []byte(strings.Replace(string(data), "  version: 1.2.3\n", "  version: 1.2.3\n  release: "+tc.yaml+"\n", 1))
		}
		if err := os.WriteFile(csvPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := bundle.Load(dir)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("release: %s: error %v, want one naming %s", tc.yaml, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("release: %s: %v", tc.yaml, err)
		}
		if b.Release != tc.want || b.CSV.Spec.Release.String() != tc.want {
			t.Errorf("release: %s: Release %q, CSV %q, want %q", tc.yaml, b.Release, b.CSV.Spec.Release.String(), tc.want)
		}
		// The bundle directory itself is left as it was.
		after, _ := os.ReadFile(csvPath)
		if string(after) != string(data) {
			t.Errorf("release: %s: Load changed the CSV file", tc.yaml)
		}
	}
}
