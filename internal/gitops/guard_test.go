package gitops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// bareWith makes a bare repo whose branch holds files (path -> content).
func bareWith(t *testing.T, branch string, files map[string]string) string {
	t.Helper()
	work := t.TempDir()
	repo, err := git.PlainInitWithOptions(work, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(branch)}})
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		full := filepath.Join(work, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wt, _ := repo.Worktree()
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0)}
	if _, err := wt.Commit("init", &git.CommitOptions{Author: sig}); err != nil {
		t.Fatal(err)
	}
	bare := t.TempDir()
	if _, err := git.PlainClone(bare, true, &git.CloneOptions{URL: work}); err != nil {
		t.Fatal(err)
	}
	return bare
}

// A --catalog-branch that the repo lacks, while it has other branches, is
// refused by Clone (catalog.OpenTip has its own test), naming the
// branches it has; --create-branch allows it; an empty repo is seeded.
func TestMissingBranch(t *testing.T) {
	ctx := context.Background()
	bare := bareWith(t, "main", map[string]string{"README.md": "x\n"})
	open := map[string]func(Options) error{
		"clone": func(o Options) error {
			r, err := Clone(ctx, o)
			if err == nil {
				r.Close()
			}
			return err
		},
	}
	for name, f := range open {
		err := f(Options{URL: bare, Branch: "mian"})
		var mb *MissingBranchError
		if !errors.As(err, &mb) || !strings.Contains(err.Error(), "it has: main") || !strings.Contains(err.Error(), "--create-branch") || !strings.Contains(err.Error(), "--catalog-branch") {
			t.Errorf("%s of a missing branch: %v", name, err)
		}
		if err := f(Options{URL: bare, Branch: "mian", CreateBranch: true}); err != nil {
			t.Errorf("%s with CreateBranch: %v", name, err)
		}
		if err := f(Options{URL: bare, Branch: "main"}); err != nil {
			t.Errorf("%s of the branch: %v", name, err)
		}
	}
	empty := t.TempDir()
	if _, err := git.PlainInit(empty, true); err != nil {
		t.Fatal(err)
	}
	for name, f := range open {
		if err := f(Options{URL: empty, Branch: "release"}); err != nil {
			t.Errorf("%s of an empty repo: %v", name, err)
		}
	}
}

func TestCheckCatalog(t *testing.T) {
	forge := []Entry{{Name: "README.md"}, {Name: "LICENSE"}, {Name: ".gitignore"}, {Name: ".gitattributes"}}
	project := []Entry{{Name: "go.mod"}, {Name: "cmd", Dir: true}, {Name: "README.md"}, {Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}
	for _, tc := range []struct {
		name     string
		hasState bool
		entries  []Entry
		o        Options
		ok       bool
	}{
		{"empty repo", false, nil, Options{}, true},
		{"forge files only", false, forge, Options{}, true},
		{"a catalog", true, project, Options{}, true},
		{"a project", false, project, Options{}, false},
		{"a project, --init-catalog", false, project, Options{InitCatalog: true}, true},
		{"a README dir is not a forge file", false, []Entry{{Name: "README", Dir: true}}, Options{}, false},
		{"--catalog-path absent or empty", false, nil, Options{Path: "catalog"}, true},
		{"--catalog-path with a README", false, []Entry{{Name: "README.md"}}, Options{Path: "catalog"}, false},
	} {
		err := CheckCatalog(tc.hasState, tc.entries, Options{URL: "https://u:s3cret@git.example.com/x.git", Path: tc.o.Path, InitCatalog: tc.o.InitCatalog})
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if err == nil {
			continue
		}
		var nc *NotCatalogError
		msg := err.Error()
		if !errors.As(err, &nc) || !strings.Contains(msg, "--init-catalog") || !strings.Contains(msg, "--catalog-path") || strings.Contains(msg, "s3cret") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	err := CheckCatalog(false, project, Options{URL: "/repo"})
	if msg := err.Error(); !strings.Contains(msg, "a, b, c, cmd/, d and 1 more") {
		t.Errorf("found list: %s", msg)
	}
}
