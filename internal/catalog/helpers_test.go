package catalog

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/testenv"
)

// gitEnv keeps the machine's Git configuration away and names a fixed
// identity, so that the git CLI's objects are reproducible.
var gitEnv = []string{
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
	"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
	"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
}

// run runs git in dir and returns its trimmed stdout; a failure fails the
// test with git's output.
func run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	bin := testenv.Require(t, "git", "git")
	cmd := exec.Command(bin, append([]string{"-C", dir}, args...)...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, gitEnv...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("git %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return strings.TrimSpace(string(out))
}

// newBare creates an empty bare repo (default branch main) and returns its
// path.
func newBare(t testing.TB) string {
	t.Helper()
	bare := filepath.Join(t.TempDir(), "catalog.git")
	run(t, ".", "init", "-q", "--bare", "-b", "main", bare)
	return bare
}

// seed commits files (path -> content) on top of branch of bare with the
// git CLI and pushes; it returns the new commit.
func seed(t testing.TB, bare, branch string, files map[string]string) string {
	t.Helper()
	wt := t.TempDir()
	run(t, wt, "init", "-q", "-b", branch)
	run(t, wt, "remote", "add", "origin", bare)
	if run(t, bare, "for-each-ref", "refs/heads/"+branch) != "" {
		run(t, wt, "fetch", "-q", "origin", branch)
		run(t, wt, "reset", "-q", "--hard", "origin/"+branch)
	}
	for p, c := range files {
		writeFile(t, wt, p, c)
	}
	run(t, wt, "add", "-A")
	run(t, wt, "commit", "-q", "-m", "seed")
	run(t, wt, "push", "-q", "origin", branch)
	return run(t, wt, "rev-parse", "HEAD")
}

func writeFile(t testing.TB, root, p, content string) {
	t.Helper()
	full := filepath.Join(root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cliTree is the tree hash the git CLI gives for branch of bare with
// changes applied on disk below prefix, as a worktree commit would: the
// directories removed (rm -r), the files written, `git add -A`, `git
// write-tree`.
func cliTree(t testing.TB, bare, branch, prefix string, changes []Change) string {
	t.Helper()
	wt := t.TempDir()
	run(t, wt, "init", "-q", "-b", branch)
	if run(t, bare, "for-each-ref", "refs/heads/"+branch) != "" {
		run(t, wt, "fetch", "-q", bare, branch)
		run(t, wt, "reset", "-q", "--hard", "FETCH_HEAD")
	}
	root := filepath.Join(wt, filepath.FromSlash(prefix))
	for _, c := range changes {
		if c.Delete {
			if err := os.RemoveAll(filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(c.Path, "/")))); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range changes {
		if !c.Delete {
			writeFile(t, root, c.Path, string(c.Data))
		}
	}
	run(t, wt, "add", "-A")
	return run(t, wt, "write-tree")
}

// catalogFiles is a small catalog: state, overlays, generated and rendered
// files of two artifacts.
func catalogFiles() map[string]string {
	return map[string]string{
		"README.md":                                    "# catalog\n",
		"publish/state.yaml":                           "state: 1\n",
		"publish/generated/etcd/artifact.yaml":         "etcd: 1\n",
		"publish/generated/redis/artifact.yaml":        "redis: 1\n",
		"kustomize/clusters/global/kustomization.yaml": "resources: []\n",
		"rendered/global/etcd/artifact.yaml":           "etcd artifact\n",
		"rendered/global/etcd/v1.0.0.yaml":             "etcd 1.0.0\n",
		"rendered/global/redis/artifact.yaml":          "redis artifact\n",
		"rendered/global/redis/v2.0.0.yaml":            "redis 2.0.0\n",
		"rendered/other/redis/artifact.yaml":           "redis other\n",
	}
}
