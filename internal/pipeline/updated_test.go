package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/lint"
)

// TestUpdatedComesFromTheCatalog: the "updated in place" list names what
// changed in the catalog, not what changed in the source: an edit of an
// older version's display name (which the Artifact takes from the newest
// version only) is not mentioned beside the edit that did change an
// Artifact.
func TestUpdatedComesFromTheCatalog(t *testing.T) {
	f := newFixture(t)
	data, _ := os.ReadFile(filepath.Join(f.source, "packages/tiny/1.1.0/manifest.yaml"))
	os.MkdirAll(filepath.Join(f.source, "packages/other/1.1.0"), 0o755)
	os.WriteFile(filepath.Join(f.source, "packages/other/1.1.0/manifest.yaml"), []byte(strings.Replace(string(data), "name: tiny.v", "name: other.v", 1)), 0o644)
	f.commit(t, "add other")
	offPackage := func(o *Options) {
		o.Lint = lint.Config{Severity: map[string]lint.Severity{"bundle/package": lint.Off}}
	}
	if _, log, err := f.runOpts(t, offPackage); err != nil {
		t.Fatalf("first run: %v\n%s", err, log)
	}
	edit := func(p, from, to string) {
		full := filepath.Join(f.source, p)
		data, _ := os.ReadFile(full)
		os.WriteFile(full, []byte(strings.Replace(string(data), from, to, 1)), 0o644)
	}
	edit("packages/tiny/1.0.0/manifest.yaml", "displayName: Tiny", "displayName: Tiny Old")
	edit("packages/other/1.1.0/manifest.yaml", "displayName: Tiny", "displayName: Other")
	f.commit(t, "edit two display names")
	res, log, err := f.runOpts(t, offPackage)
	if err != nil || res.Commit == "" {
		t.Fatalf("run: %v, commit %q\n%s", err, res.Commit, log)
	}
	if got := strings.Join(res.Changes.Updated, ","); got != "other 1.1.0" {
		t.Errorf("updated %q, want only other 1.1.0 (tiny's edit changed no rendered byte)", got)
	}
	if msg := f.catalogMessage(t); strings.Contains(msg, "tiny") {
		t.Errorf("the commit message names tiny:\n%s", msg)
	}
}
