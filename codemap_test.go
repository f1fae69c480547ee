package publish

import (
	"go/ast"
	"go/parser"
	"go/token"
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

// sizeExceptions are the production functions allowed over maxFuncLines,
// each named with its reason in docs/design.md ("Code size").
var sizeExceptions = map[string]bool{
	"cmd/publish/package.go newPackageCmd": true,
}

const maxFuncLines, maxFileLines = 120, 700

// TestCodeSize: no production file over maxFileLines lines and no
// production function over maxFuncLines, tests, bench/, hack/, test/ and
// internal/testenv aside, but the exceptions docs/design.md names.
func TestCodeSize(t *testing.T) {
	fset := token.NewFileSet()
	filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch p {
			case ".git", "bench", "hack", "test", "internal/testenv":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("%s: %d lines, over %d", p, n, maxFileLines)
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n > maxFuncLines && !sizeExceptions[filepath.ToSlash(p)+" "+fd.Name.Name] {
				t.Errorf("%s: %s is %d lines, over %d", p, fd.Name.Name, n, maxFuncLines)
			}
		}
		return nil
	})
	design, _ := os.ReadFile("docs/design.md")
	for e := range sizeExceptions {
		if !strings.Contains(string(design), "`"+strings.Replace(e, " ", "` `", 1)+"`") {
			t.Errorf("docs/design.md does not name the exception %s", e)
		}
	}
}
