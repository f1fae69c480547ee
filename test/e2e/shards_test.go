package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/testenv"
)

// shardPackages are the corpus packages of TestShards: four operators whose
// bundles and related images land in a dozen destination repositories.
var shardPackages = []string{"aqua", "authorino-operator", "cert-utils-operator", "cockroachdb"}

// command runs the binary's command cmd with the world's registry and
// catalog flags (catalogURL instead of the world's catalog) plus extra.
func (e *env) command(cmd, catalogURL string, extra ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	args := append([]string{cmd,
		"--source", e.source,
		"--catalog", catalogURL,
		"--ca-file", e.caFile,
		"--src-username", e.src.Username,
		"--dst-username", e.dst.Username,
		"--catalog-username", e.git.Username,
	}, extra...)
	c := exec.Command(publishBin, args...)
	c.Env = append(os.Environ(),
		"PUBLISH_SRC_PASSWORD="+e.src.Password,
		"PUBLISH_DST_PASSWORD="+e.dst.Password,
		"PUBLISH_CATALOG_PASSWORD="+e.git.Password,
		"DOCKER_CONFIG="+e.t.TempDir(),
		"CI_NODE_INDEX=", "CI_NODE_TOTAL=",
	)
	var o, er bytes.Buffer
	c.Stdout, c.Stderr = &o, &er
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return o.String(), er.String(), code
}

// tipTree is the tree hash of the main branch of the catalog repo at url.
func (e *env) tipTree(url string) string {
	e.t.Helper()
	r, err := git.Clone(memStorage(), nil, &git.CloneOptions{URL: url, Auth: &githttp.BasicAuth{Username: e.git.Username, Password: e.git.Password}})
	if err != nil {
		e.t.Fatalf("clone %s: %v", url, err)
	}
	head, err := r.Head()
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := r.CommitObject(head.Hash())
	if err != nil {
		e.t.Fatal(err)
	}
	return c.TreeHash.String()
}

// TestShards: `publish run --shard I/N` in N separate processes (N = 1, 3
// and 7) against the Debian registry with TLS and htpasswd, then `publish
// merge-shards`: each image is copied exactly once across the parts, no
// destination repository is split, nothing is committed before the merge,
// and the merged catalog is, tree for tree, the one of a run that is not
// split. A merge without one part's result fails naming the part and
// commits nothing; the part run again and the merge converge.
func TestShards(t *testing.T) {
	shared := testenv.RequireShared(t)
	e := newEnv(t)
	corpus := filepath.Join(t.TempDir(), "corpus")
	for _, p := range shardPackages {
		if err := os.CopyFS(filepath.Join(corpus, "community-operators", p), os.DirFS(filepath.Join(shared, "corpus", "community-operators", p))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := testenv.BuildCorpus(context.Background(), corpus, e.src.Host, filepath.Join(e.source, "packages"), e.src.Options()...); err != nil {
		t.Fatalf("building the packages: %v", err)
	}
	var waivers strings.Builder
	for _, rule := range []string{"bundle/validator/crd", "bundle/validator/service-account", "bundle/validator/related-images", "dependency/missing",
		"bundle/default-channel", "bundle/validator/csv-examples", "manifest/icon", "repo/skip-range", "bundle/validator/owned-crds", "bundle/csv-version",
		"repo/duplicate-release", "repo/duplicate-csv-name"} {
		fmt.Fprintf(&waivers, "  - rule: %s\n    reason: upstream community bundle, republished as it is\n", rule)
	}
	if err := os.WriteFile(filepath.Join(e.source, "publish.yaml"), []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nlint:\n  waivers:\n"+waivers.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	e.commit("four operators")
	results := t.TempDir()
	for _, n := range []int{1, 3, 7} {
		dst := fmt.Sprintf("%s/n%d", e.dst.Host, n)
		split := e.git.NewBareRepo(t, fmt.Sprintf("split-%d", n))
		part := func(i int) string {
			f := filepath.Join(results, fmt.Sprintf("n%d-part-%d.json", n, i))
			out, errOut, code := e.command("run", split, "--dst-registry", dst, "--shard", fmt.Sprintf("%d/%d", i, n), "--shard-result", f)
			if code != 0 {
				t.Fatalf("part %d/%d: exit %d\n%s\n%s", i, n, code, out, errOut)
			}
			return f
		}
		var files []string
		copied := map[string]int{}
		owner := map[string]int{}
		for i := 1; i <= n; i++ {
			f := part(i)
			files = append(files, f)
			r, err := report.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range r.Images {
				if im.State == report.Copied {
					copied[im.Source]++
				}
			}
			for _, it := range r.Shard.Items {
				if o, ok := owner[it.Repository]; ok && o != i {
					t.Errorf("N=%d: %s in parts %d and %d", n, it.Repository, o, i)
				}
				owner[it.Repository] = i
			}
		}
		t.Logf("N=%d: %d images copied into %d repositories", n, len(copied), len(owner))
		if len(copied) < 8 || len(owner) < 8 {
			t.Errorf("N=%d: only %d images in %d repositories: the world is too small to show a split", n, len(copied), len(owner))
		}
		for src, c := range copied {
			if c != 1 {
				t.Errorf("N=%d: %s copied %d times", n, src, c)
			}
		}
		if r, err := git.Clone(memory.NewStorage(), nil, &git.CloneOptions{URL: split, Auth: &githttp.BasicAuth{Username: e.git.Username, Password: e.git.Password}}); err == nil {
			if _, err := r.Head(); err == nil {
				t.Fatalf("N=%d: a commit before the merge", n)
			}
		}
		if n == 3 {
			// Part 2 killed while it copies (SIGKILL once it planned): it
			// leaves no result (a part that finished first loses its
			// result, as a job whose artifact was not kept). The merge
			// names the part and the images no result has, and commits
			// nothing; part 2 run again and the merge converge.
			os.Remove(files[1])
			kdst := fmt.Sprintf("%s/killed", e.dst.Host)
			killedSplit := e.git.NewBareRepo(t, "split-killed")
			var kfiles []string
			for i := 1; i <= n; i++ {
				f := filepath.Join(results, fmt.Sprintf("killed-part-%d.json", i))
				args := []string{"--dst-registry", kdst, "--shard", fmt.Sprintf("%d/%d", i, n), "--shard-result", f}
				if i == 2 {
					_, killed, log := e.runAndKill(e.source, killedSplit, "mirror: shard 2/3", args...)
					t.Logf("part 2/3 killed: %v\n%s", killed, log)
					os.Remove(f)
				} else if out, errOut, code := e.command("run", killedSplit, args...); code != 0 {
					t.Fatalf("part %d/3: exit %d\n%s\n%s", i, code, out, errOut)
				}
				kfiles = append(kfiles, f)
			}
			out, errOut, code := e.command("merge-shards", killedSplit, "--dst-registry", kdst, kfiles[0], kfiles[2])
			if code == 0 || !strings.Contains(errOut, "no result of part 2/3") || !strings.Contains(errOut, "in no part's result") {
				t.Errorf("a merge without part 2: exit %d\n%s\n%s", code, out, errOut)
			}
			if r, err := git.Clone(memory.NewStorage(), nil, &git.CloneOptions{URL: killedSplit, Auth: &githttp.BasicAuth{Username: e.git.Username, Password: e.git.Password}}); err == nil {
				if _, err := r.Head(); err == nil {
					t.Fatal("a refused merge committed")
				}
			}
			if out, errOut, code := e.command("run", killedSplit, "--dst-registry", kdst, "--shard", "2/3", "--shard-result", kfiles[1]); code != 0 {
				t.Fatalf("part 2/3 again: exit %d\n%s\n%s", code, out, errOut)
			}
			if out, errOut, code := e.command("merge-shards", killedSplit, append([]string{"--dst-registry", kdst}, kfiles...)...); code != 0 {
				t.Errorf("the merge after part 2 ran again: exit %d\n%s\n%s", code, out, errOut)
			}
			files[1] = part(2)
		}
		out, errOut, code := e.command("merge-shards", split, append([]string{"--dst-registry", dst}, files...)...)
		if code != 0 || !strings.Contains(out, "commit ") {
			t.Fatalf("N=%d: merge-shards: exit %d\n%s\n%s", n, code, out, errOut)
		}
		whole := e.git.NewBareRepo(t, fmt.Sprintf("whole-%d", n))
		if out, errOut, code := e.command("run", whole, "--dst-registry", dst); code != 0 {
			t.Fatalf("N=%d: run: exit %d\n%s\n%s", n, code, out, errOut)
		}
		if a, b := e.tipTree(split), e.tipTree(whole); a != b {
			t.Errorf("N=%d: the merged catalog is tree %s, the run's %s", n, a, b)
		}
	}
}
