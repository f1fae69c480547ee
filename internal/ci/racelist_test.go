package ci

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// makeVar returns the words of the Makefile variable name (NAME := ...,
// with backslash continuations) in makefile, or nil when it is not set.
func makeVar(makefile, name string) []string {
	lines := strings.Split(strings.ReplaceAll(makefile, "\\\n", " "), "\n")
	for _, l := range lines {
		k, v, ok := strings.Cut(l, ":=")
		if ok && strings.TrimSpace(k) == name {
			return strings.Fields(v)
		}
	}
	return nil
}

// goroutineSites returns, for each package directory under root (relative,
// slash-separated; nested modules, testdata and hidden directories left
// out), the first place where its non-test code starts a goroutine: a go
// statement, or a call of a method Go (errgroup.Group.Go, sync.WaitGroup.Go)
// in a file that imports golang.org/x/sync/errgroup or sync.
func goroutineSites(t *testing.T, root string) map[string]string {
	t.Helper()
	sites := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // a module of its own (hack/tektoncheck)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if _, done := sites[rel]; done {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		groups := false
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == "golang.org/x/sync/errgroup" || p == "sync" {
				groups = true
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if _, done := sites[rel]; done {
				return false
			}
			var at token.Pos
			switch n := n.(type) {
			case *ast.GoStmt:
				at = n.Pos()
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && groups && sel.Sel.Name == "Go" {
					at = n.Pos()
				}
			}
			if at.IsValid() {
				p := fset.Position(at)
				r, _ := filepath.Rel(root, p.Filename)
				sites[rel] = filepath.ToSlash(r) + ":" + strconv.Itoa(p.Line)
				return false
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sites
}

// TestRaceList: every package whose non-test code starts goroutines is in
// the Makefile's RACE_PKGS (what make test runs with -race), every entry there is a package, and none is also in SLOW_PKGS
// (the first of the packages tested without -race).
func TestRaceList(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	race := makeVar(string(data), "RACE_PKGS")
	slow := makeVar(string(data), "SLOW_PKGS")
	if len(race) == 0 || len(slow) == 0 {
		t.Fatalf("Makefile: RACE_PKGS or SLOW_PKGS not found (NAME := packages)")
	}
	sites := goroutineSites(t, root)
	if len(sites) == 0 {
		t.Fatal("no go statement found anywhere: the scan is broken")
	}
	for pkg, at := range sites {
		if !slices.Contains(race, pkg) {
			t.Errorf("%s starts goroutines (%s) but is not in the Makefile's RACE_PKGS: add it, so that its tests run with -race", pkg, at)
		}
	}
	for _, pkg := range race {
		if m, _ := filepath.Glob(filepath.Join(root, pkg, "*.go")); len(m) == 0 {
			t.Errorf("Makefile RACE_PKGS: %s is not a package directory", pkg)
		}
		if slices.Contains(slow, pkg) {
			t.Errorf("Makefile: %s is in both RACE_PKGS and SLOW_PKGS (it would be tested twice)", pkg)
		}
	}
	for _, pkg := range slow {
		if m, _ := filepath.Glob(filepath.Join(root, pkg, "*.go")); len(m) == 0 {
			t.Errorf("Makefile SLOW_PKGS: %s is not a package directory", pkg)
		}
	}
}

// TestRaceListFindsGoroutines: the scan finds a go statement and an
// errgroup Go call in non-test code, and ignores test files, testdata and
// nested modules.
func TestRaceListFindsGoroutines(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n")
	write("a/a.go", "package a\n\nfunc F() {\n\tgo func() {}()\n}\n")
	write("b/b.go", "package b\n\nimport \"golang.org/x/sync/errgroup\"\n\nfunc F() {\n\tvar g errgroup.Group\n\tg.Go(func() error { return nil })\n}\n")
	write("c/c.go", "package c\n")
	write("c/c_test.go", "package c\n\nfunc f() { go f() }\n")
	write("c/testdata/x.go", "package x\n\nfunc f() { go f() }\n")
	write("d/go.mod", "module example.com/d\n")
	write("d/d.go", "package d\n\nfunc f() { go f() }\n")
	got := goroutineSites(t, dir)
	want := map[string]string{"a": "a/a.go:4", "b": "b/b.go:7"}
	if len(got) != len(want) || got["a"] != want["a"] || got["b"] != want["b"] {
		t.Errorf("goroutineSites = %v, want %v", got, want)
	}
	mk := "X := 1\nRACE_PKGS := a b \\\n\tc\nSLOW_PKGS := d\n"
	if r := makeVar(mk, "RACE_PKGS"); !slices.Equal(r, []string{"a", "b", "c"}) {
		t.Errorf("makeVar RACE_PKGS = %q", r)
	}
}
