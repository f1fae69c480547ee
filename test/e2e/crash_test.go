package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/gitops"
)

// crashStages are the stages a run is killed in, each with the progress
// line publish prints when it starts.
var crashStages = []struct{ name, marker string }{
	{"mirror", "bundles: "},
	{"render", "render: "},
	{"commit", "catalog: committing"},
	{"push", "catalog: pushing"},
}

// runAndKill starts publish and sends it SIGKILL a random 0-30 ms after it
// printed marker; it returns the last progress line the process printed
// and whether it was killed (false: it finished first).
func (e *env) runAndKill(source, url, marker string, extra ...string) (last string, killed bool, out string) {
	e.t.Helper()
	p := e.publishCmd(source, url, extra...)
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	p.cmd.Stdout = &p.stdout
	if err := p.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var all strings.Builder
	var kill <-chan time.Time
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				p.wait(e.t)
				return last, killed, all.String()
			}
			all.WriteString(l + "\n")
			last = l
			if kill == nil && strings.Contains(l, marker) {
				kill = time.After(time.Duration(rand.IntN(30)) * time.Millisecond)
			}
		case <-kill:
			kill = nil
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err == nil {
				killed = true
			}
		}
	}
}

// checkImagesPresent fails the test when any commit of the catalog history
// names, in its publish/state.yaml, a bundle or an image whose digest is
// not at the destination registry.
func (e *env) checkImagesPresent(round int, hist []*object.Commit) {
	e.t.Helper()
	seen := map[string]bool{}
	for _, c := range hist {
		f, err := c.File(gitops.StatePath("global"))
		if err != nil {
			continue
		}
		data, _ := f.Contents()
		var st gitops.State
		if err := yaml.Unmarshal([]byte(data), &st); err != nil {
			e.t.Fatalf("round %d: commit %s: %s: %v", round, c.Hash, gitops.StatePath("global"), err)
		}
		var refs []string
		for _, a := range st.Artifacts {
			for _, v := range a.Versions {
				if !v.Present || !a.Present {
					continue
				}
				refs = append(refs, a.Registry+"/"+a.Repository+"@"+v.BundleDigest)
				for _, img := range v.Images {
					repo, _, _ := strings.Cut(img.Destination, "@")
					if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
						repo = repo[:i]
					}
					refs = append(refs, repo+"@"+img.Digest)
				}
			}
		}
		for _, r := range refs {
			if seen[r] {
				continue
			}
			seen[r] = true
			if _, err := remote.Head(mustRef(e.t, r), e.dst.Options()...); err != nil {
				e.t.Errorf("round %d: catalog commit %s names %s, which is not at the destination: %v", round, c.Hash.String()[:12], r, err)
			}
		}
	}
}

// normalizedTree is every file of the commit's tree with prefix replaced
// by PREFIX, so that catalogs mirrored to different prefixes compare.
func normalizedTree(t *testing.T, c *object.Commit, prefix string) map[string]string {
	t.Helper()
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	tree.Files().ForEach(func(f *object.File) error {
		s, _ := f.Contents()
		out[f.Name] = strings.ReplaceAll(s, prefix, "PREFIX")
		return nil
	})
	return out
}

// TestCrashConsistency kills `publish run` with SIGKILL during mirror,
// render, commit and push, 20 times, rerunning after each kill: the catalog
// converges to what a run that was never killed makes, and no catalog
// commit ever names an image that is not at the destination.
func TestCrashConsistency(t *testing.T) {
	e := tinyEnv(t)
	for _, v := range []string{"1.1.0", "1.2.0"} {
		e.pushTiny(v)
		e.writeManifest("tiny", v, e.src.Ref("tiny/bundle:v"+v))
	}
	e.commit("tiny 1.1.0 and 1.2.0")
	src := e.checkoutAt(e.head())

	dst := func(name string) string { return e.dst.Host + "/" + name }
	wantURL := e.git.NewBareRepo(t, "crash-want")
	clean := e.startPublish(src, wantURL, "--dst-registry", dst("crashwant"))
	if clean.wait(t); clean.code != 0 {
		t.Fatalf("clean run: exit %d\n%s", clean.code, clean.stderr.String())
	}
	want := normalizedTree(t, e.catalogAt(wantURL)[0], "crashwant")

	hits := map[string]int{}
	for i := 0; i < 20; i++ {
		stage := crashStages[i%len(crashStages)]
		name := fmt.Sprintf("crash%02d", i)
		url := e.git.NewBareRepo(t, name)
		last, killed, out := e.runAndKill(src, url, stage.marker, "--dst-registry", dst(name))
		at := "finished before the kill"
		if killed {
			at = "after " + strings.SplitN(last, ":", 2)[0] + ": " + strings.TrimSpace(strings.SplitN(last+":", ":", 3)[1])
			hits[stage.name]++
		}
		t.Logf("round %2d: kill -9 in %-6s -> %s", i, stage.name, at)
		if hist := e.catalogHistory(url); len(hist) > 0 {
			e.checkImagesPresent(i, hist)
		}
		// The rerun converges.
		p := e.startPublish(src, url, "--dst-registry", dst(name))
		if p.wait(t); p.code != 0 {
			t.Fatalf("round %d: rerun after the kill: exit %d\n%s\nkilled run:\n%s", i, p.code, p.stderr.String(), out)
		}
		hist := e.catalogHistory(url)
		e.checkImagesPresent(i, hist)
		got := normalizedTree(t, hist[0], name)
		if diff := treeDiff(want, got); diff != "" {
			t.Errorf("round %d: after the rerun the catalog differs from a clean run: %s", i, diff)
		}
	}
	t.Logf("killed during: %v", hits)
	if len(hits) < len(crashStages)-1 {
		t.Errorf("kills landed in only %v", hits)
	}
}

// catalogHistory is catalogAt, or nil when the branch has no commit yet.
func (e *env) catalogHistory(url string) []*object.Commit {
	e.t.Helper()
	rem := git.NewRemote(memStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := rem.List(&git.ListOptions{Auth: &githttp.BasicAuth{Username: e.git.Username, Password: e.git.Password}})
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		e.t.Fatalf("listing %s: %v", url, err)
	}
	for _, r := range refs {
		if r.Name() == plumbing.NewBranchReferenceName("main") {
			return e.catalogAt(url)
		}
	}
	return nil
}

func treeDiff(want, got map[string]string) string {
	var d []string
	for p, w := range want {
		if g, ok := got[p]; !ok {
			d = append(d, "missing "+p)
		} else if g != w {
			d = append(d, "differs "+p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			d = append(d, "extra "+p)
		}
	}
	sort.Strings(d)
	return strings.Join(d, ", ")
}
