package catalog

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
)

// stateYAML is a state file of one cluster listing versions (name ->
// bundle digest letter, "" for a tombstone) of artifact etcd.
func stateYAML(t *testing.T, versions map[string]string) string {
	t.Helper()
	a := model.ArtifactRecord{Name: "etcd", Present: true, Registry: "dst.example", Repository: "bundles/etcd"}
	for v, d := range versions {
		r := model.VersionRecord{Version: v, Tag: "v" + v, Present: d != ""}
		if d != "" {
			r.BundleDigest = "sha256:" + strings.Repeat(d, 64)
		}
		a.Versions = append(a.Versions, r)
	}
	st := &gitops.State{APIVersion: gitops.StateAPIVersion, Kind: gitops.StateKind, Artifacts: []model.ArtifactRecord{a}}
	model.SortRecords(st.Artifacts)
	data, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestReadHistory: a catalog repo (written by the git CLI, with committer
// times set) whose state file of cluster edge lists 0.1.0, then 0.2.0 as
// well, then (a commit that touches another file only) nothing new, then
// delists 0.1.0 and updates 0.2.0 in place, then relists 0.1.0. The
// history gives each version's events at the commit and committer time
// that made them, Since gives the last, a cluster without state has none,
// and a shallow clone of the tip is Truncated with the tip's listing.
func TestReadHistory(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	var commits []string
	commit := func(day int, files map[string]string) {
		for p, content := range files {
			full := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run(t, dir, "add", "-A")
		when := base.AddDate(0, 0, day).Format(time.RFC3339)
		// git takes the committer time from the environment only.
		cmd := exec.Command("git", "-C", dir, "commit", "-q", "-m", "day")
		cmd.Env = append(append(os.Environ(), gitEnv...), "GIT_AUTHOR_DATE="+when, "GIT_COMMITTER_DATE="+when)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git commit: %v\n%s", err, out)
		}
		commits = append(commits, run(t, dir, "rev-parse", "HEAD"))
	}
	edge := gitops.StatePath("edge")
	commit(0, map[string]string{edge: stateYAML(t, map[string]string{"0.1.0": "a"})})
	commit(3, map[string]string{edge: stateYAML(t, map[string]string{"0.1.0": "a", "0.2.0": "b"})})
	commit(4, map[string]string{"README.md": "catalog\n"})
	commit(10, map[string]string{edge: stateYAML(t, map[string]string{"0.1.0": "", "0.2.0": "c"})})
	commit(20, map[string]string{edge: stateYAML(t, map[string]string{"0.1.0": "a", "0.2.0": "c"})})

	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := repo.Head()
	h, err := ReadHistory(context.Background(), repo.Storer, head.Hash(), "", "edge")
	if err != nil {
		t.Fatal(err)
	}
	if h.Truncated || h.Commits != 5 {
		t.Errorf("truncated %v, %d commits read, want the whole line of 5", h.Truncated, h.Commits)
	}
	type ev struct {
		present bool
		digest  string
		commit  int
	}
	check := func(version string, want []ev) {
		t.Helper()
		got := h.Events("etcd", version)
		if len(got) != len(want) {
			t.Fatalf("%s: %d events %+v, want %d", version, len(got), got, len(want))
		}
		for i, w := range want {
			g := got[i]
			d := ""
			if g.BundleDigest != "" {
				d = g.BundleDigest[len("sha256:"):][:1]
			}
			if g.Present != w.present || d != w.digest || g.Commit != commits[w.commit] {
				t.Errorf("%s event %d: present %v digest %q commit %s, want %v %q %s", version, i, g.Present, d, g.Commit, w.present, w.digest, commits[w.commit])
			}
			c, _ := repo.CommitObject(plumbing.NewHash(g.Commit))
			if !g.Time.Equal(c.Committer.When) || g.Cluster != "edge" {
				t.Errorf("%s event %d: time %v cluster %q, want the committer time %v of edge", version, i, g.Time, g.Cluster, c.Committer.When)
			}
		}
	}
	check("0.1.0", []ev{{true, "a", 0}, {false, "", 3}, {true, "a", 4}})
	check("0.2.0", []ev{{true, "b", 1}, {true, "c", 3}})
	if e, ok := h.Since("etcd", "0.2.0"); !ok || !e.Time.Equal(base.AddDate(0, 0, 10)) {
		t.Errorf("0.2.0 since %v (%v), want day 10", e.Time, ok)
	}
	if _, ok := h.Since("etcd", "9.9.9"); ok {
		t.Error("a version never recorded has a Since")
	}

	t.Run("a cluster without state", func(t *testing.T) {
		h, err := ReadHistory(context.Background(), repo.Storer, head.Hash(), "", "global")
		if err != nil || len(h.events) != 0 {
			t.Errorf("%v, %d versions", err, len(h.events))
		}
	})

	t.Run("shallow tip", func(t *testing.T) {
		bare := newBare(t)
		run(t, dir, "push", "-q", bare, "main")
		tip, err := OpenTip(context.Background(), gitops.Options{URL: "file://" + bare, Branch: "main"})
		if err != nil {
			t.Fatal(err)
		}
		defer tip.Close()
		h, err := tip.History(context.Background(), "edge")
		if err != nil {
			t.Fatal(err)
		}
		if !h.Truncated || h.Commits != 1 {
			t.Errorf("truncated %v after %d commits, want the tip alone", h.Truncated, h.Commits)
		}
		if e, ok := h.Since("etcd", "0.1.0"); !ok || !e.Present || e.Commit != commits[4] {
			t.Errorf("0.1.0 at the tip: %+v (%v)", e, ok)
		}
		if _, _, err := tip.StatesAround(commits[4], "edge"); !errors.Is(err, ErrNotFetched) {
			t.Errorf("the states around the shallow tip: %v, want ErrNotFetched", err)
		}
	})

	t.Run("states around a commit", func(t *testing.T) {
		tip, err := OpenTip(context.Background(), gitops.Options{URL: dir, Branch: "main"})
		if err != nil {
			t.Fatal(err)
		}
		defer tip.Close()
		before, at, err := tip.StatesAround(commits[3], "edge")
		if err != nil {
			t.Fatal(err)
		}
		if got := model.ChangedDigests(before.Artifacts, at.Artifacts); len(got) != 1 || got[0].Version != "0.2.0" || got[0].BundleDigest != "sha256:"+strings.Repeat("c", 64) {
			t.Errorf("commit 3 listed %+v, want 0.2.0 rebuilt alone", got)
		}
		if before, at, err := tip.StatesAround(commits[0], "edge"); err != nil || before != nil || len(model.ChangedDigests(nil, at.Artifacts)) != 1 {
			t.Errorf("the root commit: before %v, at %v, %v", before, at, err)
		}
		if _, _, err := tip.StatesAround(strings.Repeat("d", 40), "edge"); !errors.Is(err, ErrNotFetched) {
			t.Errorf("a commit not in the repo: %v, want ErrNotFetched", err)
		}
	})
}

// TestOpenTipHistory: over Git smart HTTP, OpenTip fetches the branch's
// tip commit alone (a Truncated History), and with gitops.Options.History
// its whole line, which the gates between clusters date listings by.
func TestOpenTipHistory(t *testing.T) {
	o, bare := backends[1].make(t)
	seed(t, bare, "main", map[string]string{"README.md": "catalog\n"})
	for _, s := range []string{"2\n", "3\n"} {
		commitPush(t, o, bare, files(map[string]string{"README.md": s}))
	}
	want, _ := strconv.Atoi(run(t, bare, "rev-list", "--count", "main"))
	for _, full := range []bool{false, true} {
		o.History = full
		h, err := openTip(t, o).History(context.Background(), "none")
		if err != nil {
			t.Fatal(err)
		}
		if full && (h.Truncated || h.Commits != want) || !full && (!h.Truncated || h.Commits != 1) {
			t.Errorf("History %v: truncated %v, %d commits read (the branch has %d)", full, h.Truncated, h.Commits, want)
		}
	}
}
