package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// proc is one publish process started by startPublish.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	code           int
}

// startPublish starts `publish run` on the package repo checkout source
// against the catalog catalogURL, with the world's registries and
// credentials (secrets in the environment).
func (e *env) startPublish(source, catalogURL string, extra ...string) *proc {
	e.t.Helper()
	p := e.publishCmd(source, catalogURL, extra...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// publishCmd is the command startPublish starts, not started yet, its
// output not connected.
func (e *env) publishCmd(source, catalogURL string, extra ...string) *proc {
	e.t.Helper()
	args := append([]string{"run",
		"--source", source,
		"--catalog", catalogURL,
		"--dst-registry", e.dst.Host + "/mirror",
		"--ca-file", e.caFile,
		"--src-username", e.src.Username,
		"--dst-username", e.dst.Username,
		"--catalog-username", e.git.Username,
	}, extra...)
	p := &proc{cmd: exec.Command(publishBin, args...)}
	p.cmd.Env = append(os.Environ(),
		"PUBLISH_SRC_PASSWORD="+e.src.Password,
		"PUBLISH_DST_PASSWORD="+e.dst.Password,
		"PUBLISH_CATALOG_PASSWORD="+e.git.Password,
		"DOCKER_CONFIG="+e.t.TempDir(),
		"TMPDIR="+e.t.TempDir(), // what a killed run leaves behind goes with the test
	)
	return p
}

// wait waits for the process and records its exit code (-1: killed).
func (p *proc) wait(t *testing.T) {
	err := p.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		p.code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
}

// checkoutAt clones the package repo and checks out the commit h: one CI
// job's checkout, with the package repo as its origin.
func (e *env) checkoutAt(h plumbing.Hash) string {
	e.t.Helper()
	dir := filepath.Join(e.t.TempDir(), "checkout")
	for _, args := range [][]string{
		{"clone", "--quiet", e.source, dir},
		{"-C", dir, "checkout", "--quiet", "--detach", h.String()},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			e.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dir
}

func (e *env) head() plumbing.Hash {
	h, err := e.repo.Head()
	if err != nil {
		e.t.Fatal(err)
	}
	return h.Hash()
}

// catalogAt clones the catalog repo url and returns its first-parent
// history, newest first.
func (e *env) catalogAt(url string) []*object.Commit {
	e.t.Helper()
	repo, err := git.Clone(memStorage(), nil, &git.CloneOptions{
		URL:  url,
		Auth: &githttp.BasicAuth{Username: e.git.Username, Password: e.git.Password},
	})
	if err != nil {
		e.t.Fatalf("cloning %s: %v", url, err)
	}
	head, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*object.Commit
	for c, err := repo.CommitObject(head.Hash()); err == nil; {
		out = append(out, c)
		if c.NumParents() == 0 {
			break
		}
		if c, err = c.Parent(0); err != nil {
			e.t.Fatal(err)
		}
	}
	return out
}

// sourceCommit is the Source-Commit trailer of a catalog commit.
func sourceCommit(c *object.Commit) string {
	for _, l := range strings.Split(c.Message, "\n") {
		if s, ok := strings.CutPrefix(l, "Source-Commit: "); ok {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// TestConcurrentPublishRace is the story of two pipelines publishing two
// commits of the package repo to one catalog branch at the same moment, 10
// times: both exit 0 (the older one may report that a newer commit is
// already published), the catalog ends byte for byte as one run of the
// newer commit makes it, and no catalog commit of the older source commit
// ever follows one of the newer (no lost update).
func TestConcurrentPublishRace(t *testing.T) {
	e := tinyEnv(t)
	base := e.head()
	e.pushTiny("1.1.0")
	e.writeManifest("tiny", "1.1.0", e.src.Ref("tiny/bundle:v1.1.0"))
	e.commit("tiny 1.1.0")
	older := e.head()
	e.pushTiny("1.2.0")
	e.writeManifest("tiny", "1.2.0", e.src.Ref("tiny/bundle:v1.2.0"))
	e.commit("tiny 1.2.0")
	newer := e.head()
	srcBase, srcOld, srcNew := e.checkoutAt(base), e.checkoutAt(older), e.checkoutAt(newer)

	publishSeq := func(url string, sources ...string) {
		for _, s := range sources {
			p := e.startPublish(s, url)
			if p.wait(t); p.code != 0 {
				t.Fatalf("publish %s: exit %d\n%s%s", s, p.code, p.stdout.String(), p.stderr.String())
			}
		}
	}
	// What one run of the newer commit makes of the catalog at base.
	want := e.git.NewBareRepo(t, "want")
	publishSeq(want, srcBase, srcNew)
	wantTree := e.catalogAt(want)[0].TreeHash

	var retried, superseded, olderFirst int
	for i := 0; i < 10; i++ {
		url := e.git.NewBareRepo(t, "race"+string(rune('a'+i)))
		publishSeq(url, srcBase)
		a, b := e.startPublish(srcOld, url), e.startPublish(srcNew, url)
		a.wait(t)
		b.wait(t)
		for _, p := range []*proc{a, b} {
			if p.code != 0 {
				t.Fatalf("round %d: exit %d\n%s%s", i, p.code, p.stdout.String(), p.stderr.String())
			}
			if strings.Contains(p.stderr.String(), "push rejected") {
				retried++
			}
		}
		if strings.Contains(a.stdout.String(), "already published from a newer source commit") {
			superseded++
		}
		hist := e.catalogAt(url)
		if hist[0].TreeHash != wantTree {
			t.Errorf("round %d: the catalog tree is %s, one run of the newer commit makes %s\nolder:\n%s%s\nnewer:\n%s%s", i, hist[0].TreeHash, wantTree, a.stdout.String(), a.stderr.String(), b.stdout.String(), b.stderr.String())
		}
		if got := sourceCommit(hist[0]); got != newer.String() {
			t.Errorf("round %d: the last catalog commit names source %s, want the newer %s", i, got, newer)
		}
		seenNewer := false
		for j := len(hist) - 1; j >= 0; j-- {
			switch sourceCommit(hist[j]) {
			case newer.String():
				seenNewer = true
			case older.String():
				if seenNewer {
					t.Errorf("round %d: lost update: a commit of the older source follows one of the newer", i)
				}
				olderFirst++
			}
		}
	}
	t.Logf("10 rounds: the older commit published first %d times, was superseded %d times; %d rejected pushes retried", olderFirst, superseded, retried)
}
