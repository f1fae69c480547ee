package diff

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/operator-publish/publish/internal/testenv"
)

// manifestYAML is a valid PackageManifest; extra lands in the description
// so that two calls can differ in bytes but not in identity.
func manifestYAML(artifact, version, extra string) string {
	return fmt.Sprintf(`apiVersion: app.alauda.cn/v1beta1
kind: PackageManifest
metadata:
  name: %[1]s.v%[2]s
spec:
  type: bundle
  artifact: registry.example.com/ops/%[1]s-bundle:v%[2]s
  version: v%[2]s
  arch: [linux/amd64]
  info:
    displayName: %[1]s
    description: "%[3]s"
  relatedImages:
  - registry.example.com/ops/%[1]s-operator:v%[2]s
`, artifact, version, extra)
}

func pkgPath(artifact, version string) string {
	return "packages/" + artifact + "/" + version + "/manifest.yaml"
}

// testRepo builds a history in a temporary directory with go-git, with
// fixed signatures one minute apart.
type testRepo struct {
	t    *testing.T
	dir  string
	repo *git.Repository
	wt   *git.Worktree
	n    int
}

var epoch = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func newRepo(t *testing.T) *testRepo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pkgrepo")
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, "refs/heads/main")); err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	return &testRepo{t: t, dir: dir, repo: repo, wt: wt}
}

func (r *testRepo) write(p, content string) *testRepo {
	r.t.Helper()
	full := filepath.Join(r.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return r
}

// add writes a manifest at its default path.
func (r *testRepo) add(artifact, version string) *testRepo {
	return r.write(pkgPath(artifact, version), manifestYAML(artifact, version, ""))
}

func (r *testRepo) remove(p string) *testRepo {
	r.t.Helper()
	if err := os.RemoveAll(filepath.Join(r.dir, filepath.FromSlash(p))); err != nil {
		r.t.Fatal(err)
	}
	return r
}

func (r *testRepo) move(from, to string) *testRepo {
	r.t.Helper()
	dst := filepath.Join(r.dir, filepath.FromSlash(to))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(r.dir, filepath.FromSlash(from)), dst); err != nil {
		r.t.Fatal(err)
	}
	return r
}

func (r *testRepo) sig() *object.Signature {
	r.n++
	return &object.Signature{Name: "Test", Email: "test@example.com", When: epoch.Add(time.Duration(r.n) * time.Minute)}
}

// commit stages everything (git add -A) and commits; parents are extra
// parents after HEAD (a merge).
func (r *testRepo) commit(msg string, parents ...plumbing.Hash) plumbing.Hash {
	r.t.Helper()
	if err := r.wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		r.t.Fatal(err)
	}
	o := &git.CommitOptions{Author: r.sig(), AllowEmptyCommits: true}
	o.Committer = o.Author
	if len(parents) > 0 {
		o.Parents = append([]plumbing.Hash{r.head()}, parents...)
	}
	h, err := r.wt.Commit(msg, o)
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

func (r *testRepo) head() plumbing.Hash {
	r.t.Helper()
	h, err := r.repo.Head()
	if err != nil {
		r.t.Fatal(err)
	}
	return h.Hash()
}

// checkout switches to a branch, creating it at HEAD when create.
func (r *testRepo) checkout(branch string, create bool) {
	r.t.Helper()
	if err := r.wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(branch), Create: create}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *testRepo) setRef(name string, h plumbing.Hash) {
	r.t.Helper()
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(name), h)); err != nil {
		r.t.Fatal(err)
	}
}

func (r *testRepo) resetHard(h plumbing.Hash) {
	r.t.Helper()
	if err := r.wt.Reset(&git.ResetOptions{Commit: h, Mode: git.HardReset}); err != nil {
		r.t.Fatal(err)
	}
}

// compute runs Compute on the repo with o (Repo and Log filled in).
func (r *testRepo) compute(o Options) *Result {
	r.t.Helper()
	return computeIn(r.t, r.dir, o)
}

func computeIn(t *testing.T, dir string, o Options) *Result {
	t.Helper()
	if o.Repo == "" {
		o.Repo = dir
	}
	var log bytes.Buffer
	if o.Log != nil {
		o.Log = io.MultiWriter(o.Log, &log)
	} else {
		o.Log = &log
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	res, err := Compute(context.Background(), o)
	if err != nil {
		t.Fatalf("Compute: %v\nlog:\n%s", err, log.String())
	}
	t.Logf("log:\n%s", log.String())
	return res
}

func wantChanges(t *testing.T, res *Result, want ...Change) {
	t.Helper()
	if res.All {
		t.Fatalf("All is set (warnings %q), want changes %+v", res.Warnings, want)
	}
	if len(want) == 0 && len(res.Changes) == 0 {
		return
	}
	if !reflect.DeepEqual(res.Changes, want) {
		t.Fatalf("changes:\n got %+v\nwant %+v", res.Changes, want)
	}
}

func wantWarning(t *testing.T, res *Result, parts ...string) {
	t.Helper()
	all := strings.Join(res.Warnings, "\n")
	for _, p := range parts {
		if !strings.Contains(all, p) {
			t.Errorf("warnings %q lack %q", res.Warnings, p)
		}
	}
}

func noWarnings(t *testing.T, res *Result) {
	t.Helper()
	if len(res.Warnings) > 0 {
		t.Errorf("unexpected warnings %q", res.Warnings)
	}
}

// needGit skips a test that needs the git command.
func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Skip(t, "git command not installed")
	}
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// shallowClone clones src with `git clone --depth N file://...` (extra
// arguments before the URL).
func shallowClone(t *testing.T, src string, depth int, extra ...string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "clone")
	args := append([]string{"clone", "--quiet", fmt.Sprintf("--depth=%d", depth)}, extra...)
	runGit(t, filepath.Dir(dst), append(args, "file://"+src, dst)...)
	return dst
}

// withFetchers sets the fetch implementations for one test.
func withFetchers(t *testing.T, goGit bool, gitCmd string) {
	oldGoGit, oldCmd := goGitFetch, gitCommand
	goGitFetch, gitCommand = goGit, gitCmd
	t.Cleanup(func() { goGitFetch, gitCommand = oldGoGit, oldCmd })
}
