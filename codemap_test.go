package publish

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCodeMapNamesEveryPackage: every Go package below internal/ (a
// directory holding a non-test .go file) is named in the code map of
// docs/design.md as internal/<path>/, and the map names no package that is
// gone.
func TestCodeMapNamesEveryPackage(t *testing.T) {
	data, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "## Code map")
	if !ok {
		t.Fatal("docs/design.md has no Code map section")
	}
	block, _, _ := strings.Cut(after, "\n## ")
	named := map[string]bool{}
	for _, line := range strings.Split(block, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "internal/") {
			named[strings.TrimSuffix(f[0], "/")] = true
		}
	}
	have := map[string]bool{}
	filepath.WalkDir("internal", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		have[filepath.ToSlash(filepath.Dir(p))] = true
		return nil
	})
	for p := range have {
		if !named[p] {
			t.Errorf("docs/design.md's code map does not name %s/", p)
		}
	}
	for p := range named {
		if !have[p] {
			t.Errorf("docs/design.md's code map names %s/, which holds no package", p)
		}
	}
}

// trackerCitation matches a citation of the project's issue tracker in
// prose: code comments and docs describe the code, not the tracker.
var trackerCitation = regexp.MustCompile(`(?i)\(issue \d+|\bissue \d+('s|,)? points?\b|\bis issue \d+|\bof issue \d+`)

// TestNoTrackerCitations: no Go file, doc, script or workflow of the
// repository cites the issue tracker ("issue 13 point 4").
func TestNoTrackerCitations(t *testing.T) {
	filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		switch filepath.Ext(p) {
		case ".go", ".md", ".sh", ".yml", ".yaml":
		default:
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if trackerCitation.MatchString(line) && !strings.Contains(line, "trackerCitation") && !strings.Contains(line, `"issue 13 point 4"`) {
				t.Errorf("%s:%d cites the tracker: %s", p, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
}
