package diff

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// base: etcd 0.9.2 and 0.9.4, redis 7.0.0.
func baseRepo(t *testing.T) (*testRepo, plumbing.Hash) {
	r := newRepo(t)
	r.write("README.md", "package repo\n").add("etcd", "0.9.2").add("etcd", "0.9.4").add("redis", "7.0.0")
	return r, r.commit("initial")
}

func TestAddVersion(t *testing.T) {
	r, c1 := baseRepo(t)
	r.add("etcd", "0.9.5")
	c2 := r.commit("etcd 0.9.5")
	res := r.compute(Options{StateCommit: c1.String()})
	wantChanges(t, res, Change{Artifact: "etcd", Version: "0.9.5", Kind: Added, Path: pkgPath("etcd", "0.9.5")})
	noWarnings(t, res)
	if res.Base != c1.String() || res.Head != c2.String() || res.BaseFrom != FromState {
		t.Errorf("base %s head %s from %s", res.Base, res.Head, res.BaseFrom)
	}
	if !res.Changed("etcd", "0.9.5") || !res.Changed("etcd", "v0.9.5") || res.Changed("etcd", "0.9.4") || res.Changed("redis", "7.0.0") {
		t.Error("Changed disagrees with Changes")
	}
	if len(res.Removed()) != 0 {
		t.Errorf("removed: %+v", res.Removed())
	}
}

func TestAddArtifact(t *testing.T) {
	r, c1 := baseRepo(t)
	r.add("kafka", "3.7.0").add("kafka", "3.8.0")
	r.commit("kafka")
	res := r.compute(Options{StateCommit: c1.String()})
	wantChanges(t, res,
		Change{Artifact: "kafka", Version: "3.7.0", Kind: Added, Path: pkgPath("kafka", "3.7.0")},
		Change{Artifact: "kafka", Version: "3.8.0", Kind: Added, Path: pkgPath("kafka", "3.8.0")})
}

func TestRemoveVersion(t *testing.T) {
	r, c1 := baseRepo(t)
	r.remove("packages/etcd/0.9.2")
	r.commit("drop etcd 0.9.2")
	res := r.compute(Options{StateCommit: c1.String()})
	want := Change{Artifact: "etcd", Version: "0.9.2", Kind: Removed, Path: pkgPath("etcd", "0.9.2")}
	wantChanges(t, res, want)
	if rm := res.Removed(); len(rm) != 1 || rm[0] != want {
		t.Errorf("Removed() = %+v", rm)
	}
	if res.Changed("etcd", "0.9.2") {
		t.Error("a removed version counts as changed")
	}
}

func TestRemoveArtifact(t *testing.T) {
	r, c1 := baseRepo(t)
	r.remove("packages/etcd")
	r.commit("drop etcd")
	res := r.compute(Options{StateCommit: c1.String()})
	wantChanges(t, res,
		Change{Artifact: "etcd", Version: "0.9.2", Kind: Removed, Path: pkgPath("etcd", "0.9.2")},
		Change{Artifact: "etcd", Version: "0.9.4", Kind: Removed, Path: pkgPath("etcd", "0.9.4")})
}

func TestMoveDirectoryIsNoChange(t *testing.T) {
	r, c1 := baseRepo(t)
	r.move("packages/etcd", "packages/coreos/etcd-operator")
	r.move("packages/redis/7.0.0", "packages/redis/v7.0.0")
	r.commit("reorganise")
	res := r.compute(Options{StateCommit: c1.String()})
	wantChanges(t, res)
	noWarnings(t, res)
	if res.Changed("etcd", "0.9.4") {
		t.Error("moved version counts as changed")
	}
	// The moves are told apart from changes: the state follows them.
	var moved []string
	for _, m := range res.Moved {
		moved = append(moved, m.Artifact+" "+m.Version+" "+m.OldPath+" -> "+m.Path)
	}
	want := []string{
		"etcd 0.9.2 " + pkgPath("etcd", "0.9.2") + " -> packages/coreos/etcd-operator/0.9.2/manifest.yaml",
		"etcd 0.9.4 " + pkgPath("etcd", "0.9.4") + " -> packages/coreos/etcd-operator/0.9.4/manifest.yaml",
		"redis 7.0.0 " + pkgPath("redis", "7.0.0") + " -> packages/redis/v7.0.0/manifest.yaml",
	}
	if strings.Join(moved, "\n") != strings.Join(want, "\n") {
		t.Errorf("moved:\n%s\nwant:\n%s", strings.Join(moved, "\n"), strings.Join(want, "\n"))
	}
}

func TestMoveAndEdit(t *testing.T) {
	r, c1 := baseRepo(t)
	r.move("packages/redis/7.0.0", "packages/redis/v7.0.0")
	r.write("packages/redis/v7.0.0/manifest.yaml", manifestYAML("redis", "7.0.0", "now with a description"))
	r.commit("move and edit")
	res := r.compute(Options{StateCommit: c1.String()})
	wantChanges(t, res, Change{Artifact: "redis", Version: "7.0.0", Kind: Modified,
		Path: "packages/redis/v7.0.0/manifest.yaml", OldPath: pkgPath("redis", "7.0.0")})
}

func TestRenameArtifact(t *testing.T) {
	r, c1 := baseRepo(t)
	// Same path, metadata.name changed: delist the old name, list the new.
	r.write(pkgPath("etcd", "0.9.4"), manifestYAML("etcd-operator", "0.9.4", ""))
	r.commit("rename etcd 0.9.4")
	res := r.compute(Options{StateCommit: c1.String()})
	wantChanges(t, res,
		Change{Artifact: "etcd", Version: "0.9.4", Kind: Removed, Path: pkgPath("etcd", "0.9.4")},
		Change{Artifact: "etcd-operator", Version: "0.9.4", Kind: Added, Path: pkgPath("etcd", "0.9.4")})
}

func TestEditInPlace(t *testing.T) {
	r, c1 := baseRepo(t)
	r.write(pkgPath("etcd", "0.9.4"), manifestYAML("etcd", "0.9.4", "new related image"))
	r.commit("edit etcd 0.9.4")
	res := r.compute(Options{StateCommit: c1.String()})
	wantChanges(t, res, Change{Artifact: "etcd", Version: "0.9.4", Kind: Modified, Path: pkgPath("etcd", "0.9.4"), OldPath: pkgPath("etcd", "0.9.4")})
	if !res.Changed("etcd", "0.9.4") {
		t.Error("modified version does not count as changed")
	}
}

func TestNonManifestChangesAreNoOps(t *testing.T) {
	r, c1 := baseRepo(t)
	r.write("README.md", "changed\n")
	r.write("packages/etcd/README.md", "notes\n")
	r.write("packages/etcd/0.9.4/icon.png", "png")
	r.write("packages/configs/manifest.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
	r.write("docs/manifest.yaml", manifestYAML("outside", "1.0.0", "")) // outside packages/
	r.commit("docs")
	res := r.compute(Options{StateCommit: c1.String()})
	wantChanges(t, res)
	noWarnings(t, res)
	if len(res.Invalid) != 0 {
		t.Errorf("invalid: %v", res.Invalid)
	}
}

func TestInvalidManifestIsReported(t *testing.T) {
	r, c1 := baseRepo(t)
	r.write(pkgPath("etcd", "0.9.4"), strings.Replace(manifestYAML("etcd", "0.9.4", ""), "arch:", "archs:", 1))
	r.write(pkgPath("new", "1.0.0"), "not: [valid")
	r.add("kafka", "3.8.0")
	r.commit("broken")
	res := r.compute(Options{StateCommit: c1.String()})
	wantChanges(t, res, Change{Artifact: "kafka", Version: "3.8.0", Kind: Added, Path: pkgPath("kafka", "3.8.0")})
	want := []string{pkgPath("etcd", "0.9.4"), pkgPath("new", "1.0.0")}
	if strings.Join(res.Invalid, ",") != strings.Join(want, ",") {
		t.Errorf("invalid %v, want %v", res.Invalid, want)
	}
}

func TestWorktreeIsIgnored(t *testing.T) {
	r, c1 := baseRepo(t)
	r.add("etcd", "0.9.5")
	r.commit("etcd 0.9.5")
	// Uncommitted edits do not count.
	r.write(pkgPath("redis", "7.0.0"), manifestYAML("redis", "7.0.0", "uncommitted"))
	r.add("kafka", "1.0.0")
	r.remove("packages/etcd/0.9.2")
	res := r.compute(Options{StateCommit: c1.String()})
	wantChanges(t, res, Change{Artifact: "etcd", Version: "0.9.5", Kind: Added, Path: pkgPath("etcd", "0.9.5")})
}

func TestFirstPublish(t *testing.T) {
	r, _ := baseRepo(t)
	res := r.compute(Options{})
	if !res.All || res.BaseFrom != FromNone || res.Base != "" || len(res.Warnings) != 0 {
		t.Fatalf("first publish: %+v", res)
	}
	if !res.Changed("anything", "1.0.0") {
		t.Error("All must count every version as changed")
	}
}

// TestBaseIsHead: a base equal to HEAD is the normal case of a run after
// a run: no changes, said as information, not as a warning.
func TestBaseIsHead(t *testing.T) {
	r, c1 := baseRepo(t)
	var log bytes.Buffer
	res := r.compute(Options{StateCommit: c1.String(), Log: &log})
	wantChanges(t, res)
	noWarnings(t, res)
	if l := log.String(); !strings.Contains(l, "is HEAD: nothing to compare") || strings.Contains(l, "warning") {
		t.Errorf("log %q: want the information line, no warning", l)
	}
	if res.Base != c1.String() {
		t.Errorf("base %q", res.Base)
	}
}

func TestForcePush(t *testing.T) {
	r, c1 := baseRepo(t)
	r.add("etcd", "0.9.5")
	published := r.commit("etcd 0.9.5 (published, then force-pushed away)")
	r.resetHard(c1)
	r.add("redis", "7.2.0")
	r.commit("redis 7.2.0")

	res := r.compute(Options{StateCommit: published.String()})
	if !res.All || res.BaseFrom != FromState || res.Base != "" || len(res.Changes) != 0 {
		t.Fatalf("force push: %+v", res)
	}
	wantWarning(t, res, "not an ancestor of HEAD", "force push", "every version counts as changed")

	// An explicit --base is compared anyway, with a warning.
	res = r.compute(Options{Base: published.String(), StateCommit: published.String()})
	wantChanges(t, res,
		Change{Artifact: "etcd", Version: "0.9.5", Kind: Removed, Path: pkgPath("etcd", "0.9.5")},
		Change{Artifact: "redis", Version: "7.2.0", Kind: Added, Path: pkgPath("redis", "7.2.0")})
	wantWarning(t, res, "not an ancestor of HEAD", "comparing the two trees anyway")
}

func TestMissingBaseObject(t *testing.T) {
	r, _ := baseRepo(t)
	missing := strings.Repeat("ab", 20)
	res := r.compute(Options{StateCommit: missing})
	if !res.All {
		t.Fatal("a missing base must not be no changes")
	}
	wantWarning(t, res, "not in the clone", "fetch-depth: 0", "GIT_DEPTH: 0")
	res = r.compute(Options{StateCommit: missing, Fetch: true})
	if !res.All {
		t.Fatal("a missing base must not be no changes")
	}
	wantWarning(t, res, `no remote "origin"`)

	res = r.compute(Options{Base: strings.Repeat("0", 40)})
	if !res.All {
		t.Fatal("zero base")
	}
	wantWarning(t, res, "zero commit")
}

func TestMergeCommits(t *testing.T) {
	r, c1 := baseRepo(t)
	r.checkout("feature", true)
	r.add("kafka", "3.8.0")
	feature := r.commit("kafka on feature")
	r.checkout("main", false)
	r.write(pkgPath("etcd", "0.9.4"), manifestYAML("etcd", "0.9.4", "fix"))
	mainOnly := r.commit("etcd fix on main")
	r.add("kafka", "3.8.0") // the merge result: both sides
	merge := r.commit("merge feature", feature)
	if r.head() != merge {
		t.Fatal("merge not at HEAD")
	}
	kafka := Change{Artifact: "kafka", Version: "3.8.0", Kind: Added, Path: pkgPath("kafka", "3.8.0")}
	etcd := Change{Artifact: "etcd", Version: "0.9.4", Kind: Modified, Path: pkgPath("etcd", "0.9.4"), OldPath: pkgPath("etcd", "0.9.4")}

	wantChanges(t, r.compute(Options{StateCommit: c1.String()}), etcd, kafka)
	// Published at main's first-parent commit: only what the merge brought.
	wantChanges(t, r.compute(Options{StateCommit: mainOnly.String()}), kafka)
	// Published at the feature commit (reachable through the second parent).
	wantChanges(t, r.compute(Options{StateCommit: feature.String()}), etcd)
}

func TestPRTargetMovedOn(t *testing.T) {
	r, _ := baseRepo(t)
	r.add("etcd", "0.9.5")
	forkPoint := r.commit("etcd 0.9.5")
	r.checkout("feature", true)
	r.add("kafka", "3.8.0")
	r.commit("kafka")
	r.write(pkgPath("kafka", "3.8.0"), manifestYAML("kafka", "3.8.0", "fixup"))
	r.commit("kafka fixup")
	r.checkout("main", false)
	r.add("redis", "7.2.0") // main moves on after the branch point
	r.remove("packages/etcd/0.9.2")
	r.commit("main moves on")
	r.checkout("feature", false)

	res := r.compute(Options{PR: true, TargetBranch: "main"})
	wantChanges(t, res, Change{Artifact: "kafka", Version: "3.8.0", Kind: Added, Path: pkgPath("kafka", "3.8.0")})
	if res.Base != forkPoint.String() || res.BaseFrom != FromMergeBase {
		t.Errorf("base %s from %s, want merge-base %s", res.Base, res.BaseFrom, forkPoint)
	}
	// refs/heads/ prefix is accepted.
	if res := r.compute(Options{PR: true, TargetBranch: "refs/heads/main"}); res.Base != forkPoint.String() {
		t.Errorf("refs/heads/main: base %s", res.Base)
	}
}

func TestExplicitBaseWins(t *testing.T) {
	r, c1 := baseRepo(t)
	r.add("etcd", "0.9.5")
	c2 := r.commit("etcd 0.9.5")
	r.add("kafka", "3.8.0")
	r.commit("kafka")
	r.setRef("refs/tags/v1", c1)
	env := func(k string) string {
		return map[string]string{"GITHUB_BASE_REF": "main", "CI_MERGE_REQUEST_DIFF_BASE_SHA": c2.String()}[k]
	}
	for _, base := range []string{c1.String(), c1.String()[:10], "v1", "HEAD~2"} {
		res := r.compute(Options{Base: base, PR: true, TargetBranch: "main", StateCommit: c2.String(), Getenv: env})
		if res.BaseFrom != FromFlag || res.Base != c1.String() {
			t.Fatalf("--base %s: base %s from %s", base, res.Base, res.BaseFrom)
		}
		if len(res.Changes) != 2 {
			t.Errorf("--base %s: %+v", base, res.Changes)
		}
	}
	res := r.compute(Options{Base: "no-such-branch"})
	if !res.All {
		t.Fatal("unknown --base must not be no changes")
	}
	wantWarning(t, res, `base no-such-branch (--base) is not in the clone`)
}

func TestGitHubBaseRef(t *testing.T) {
	r, c1 := baseRepo(t)
	r.checkout("feature", true)
	r.add("kafka", "3.8.0")
	r.commit("kafka")
	// Like a CI checkout: the target branch exists only as origin/main,
	// and a stale local main must lose to it.
	r.add("redis", "7.2.0")
	c3 := r.commit("redis")
	r.setRef("refs/remotes/origin/main", c3)
	r.add("kafka", "3.9.0")
	r.commit("kafka 3.9.0")
	_ = c1

	env := map[string]string{"GITHUB_BASE_REF": "main"}
	res := r.compute(Options{PR: true, Getenv: func(k string) string { return env[k] }})
	if res.BaseFrom != FromMergeBase || res.Base != c3.String() {
		t.Fatalf("base %s from %s, want origin/main %s", res.Base, res.BaseFrom, c3)
	}
	wantChanges(t, res, Change{Artifact: "kafka", Version: "3.9.0", Kind: Added, Path: pkgPath("kafka", "3.9.0")})

	// PR mode is off: the CI variables are not read.
	res = r.compute(Options{Getenv: func(k string) string { return env[k] }})
	if res.BaseFrom != FromNone || !res.All {
		t.Errorf("not PR mode: %+v", res)
	}
}

func TestGitLabVariables(t *testing.T) {
	r, c1 := baseRepo(t)
	r.add("etcd", "0.9.5")
	c2 := r.commit("etcd 0.9.5")
	r.checkout("feature", true)
	r.add("kafka", "3.8.0")
	r.commit("kafka")

	env := map[string]string{"CI_MERGE_REQUEST_DIFF_BASE_SHA": c1.String(), "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"}
	getenv := func(k string) string { return env[k] }
	res := r.compute(Options{PR: true, Getenv: getenv})
	if res.BaseFrom != FromCI || res.Base != c1.String() {
		t.Fatalf("base %s from %s, want ci %s", res.Base, res.BaseFrom, c1)
	}
	if len(res.Changes) != 2 {
		t.Errorf("changes %+v", res.Changes)
	}
	delete(env, "CI_MERGE_REQUEST_DIFF_BASE_SHA")
	res = r.compute(Options{PR: true, Getenv: getenv})
	if res.BaseFrom != FromMergeBase || res.Base != c2.String() {
		t.Fatalf("base %s from %s, want merge-base %s", res.Base, res.BaseFrom, c2)
	}
	wantChanges(t, res, Change{Artifact: "kafka", Version: "3.8.0", Kind: Added, Path: pkgPath("kafka", "3.8.0")})

	// No target at all in PR mode: everything, with a warning.
	res = r.compute(Options{PR: true})
	if !res.All {
		t.Fatal("PR mode without a target must not be no changes")
	}
	wantWarning(t, res, "no target branch", "--target-branch")

	// A target branch that does not exist.
	res = r.compute(Options{PR: true, TargetBranch: "release-9"})
	if !res.All {
		t.Fatal("missing target must not be no changes")
	}
	wantWarning(t, res, `target branch "release-9"`)
}

func TestSubdirectoryAndPackagesDir(t *testing.T) {
	r := newRepo(t)
	r.write("ops/catalog/etcd/0.9.4/manifest.yaml", manifestYAML("etcd", "0.9.4", ""))
	c1 := r.commit("initial")
	r.write("ops/catalog/etcd/0.9.5/manifest.yaml", manifestYAML("etcd", "0.9.5", ""))
	r.write("packages/etcd/1.0.0/manifest.yaml", manifestYAML("etcd", "1.0.0", "")) // not below the packages dir
	r.commit("more")
	res := computeIn(t, r.dir, Options{Repo: filepath.Join(r.dir, "ops"), PackagesDir: "catalog", StateCommit: c1.String()})
	wantChanges(t, res, Change{Artifact: "etcd", Version: "0.9.5", Kind: Added, Path: "ops/catalog/etcd/0.9.5/manifest.yaml"})

	// The packages directory did not exist at base.
	res = computeIn(t, r.dir, Options{StateCommit: c1.String()})
	wantChanges(t, res, Change{Artifact: "etcd", Version: "1.0.0", Kind: Added, Path: pkgPath("etcd", "1.0.0")})

	// "." is the whole repo.
	res = computeIn(t, r.dir, Options{PackagesDir: ".", StateCommit: c1.String()})
	if len(res.Changes) != 2 {
		t.Errorf("whole repo: %+v", res.Changes)
	}
	if _, err := Compute(context.Background(), Options{Repo: r.dir, PackagesDir: "../elsewhere"}); err == nil {
		t.Error("a packages dir outside the repo must be an error")
	}
}

func TestNotAGitRepo(t *testing.T) {
	_, err := Compute(context.Background(), Options{Repo: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "not inside a Git repository") {
		t.Fatalf("got %v", err)
	}
	r := newRepo(t) // no commit yet
	if _, err := Compute(context.Background(), Options{Repo: r.dir}); err == nil {
		t.Fatal("a repo without commits must be an error")
	}
}

func TestCancelled(t *testing.T) {
	r, c1 := baseRepo(t)
	r.add("etcd", "0.9.5")
	r.commit("x")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Compute(ctx, Options{Repo: r.dir, StateCommit: c1.String()})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func TestCrissCrossMergeBase(t *testing.T) {
	r, _ := baseRepo(t)
	r.checkout("b", true)
	r.add("b", "1.0.0")
	b1 := r.commit("b1")
	r.checkout("main", false)
	r.add("a", "1.0.0")
	a1 := r.commit("a1")
	r.add("b", "1.0.0")
	a2 := r.commit("a2 merges b1", b1)
	r.checkout("b", false)
	r.add("a", "1.0.0")
	b2 := r.commit("b2 merges a1", a1)
	c := &computer{repo: r.repo, shallow: map[plumbing.Hash]bool{}}
	ca, _ := r.repo.CommitObject(a2)
	cb, _ := r.repo.CommitObject(b2)
	mbs, err := c.mergeBases(ca, cb)
	if err != nil {
		t.Fatal(err)
	}
	if len(mbs) != 2 || !containsCommit(mbs, a1) || !containsCommit(mbs, b1) {
		t.Fatalf("merge bases %v, want a1 %s and b1 %s", mbs, a1, b1)
	}
	if mbs[0].Hash != a1 { // a1 is newer
		t.Errorf("newest first: got %s", mbs[0].Hash)
	}
}

// ---- shallow clones and fetching (need the git command) ----

// origin: c1 (etcd 0.9.2/0.9.4, redis), c2 (+etcd 0.9.5), c3 (+kafka);
// branch feature off c3 with +redis 7.2.0, main then moves on (+nginx).
func originRepo(t *testing.T) (r *testRepo, c1, c2, c3 plumbing.Hash) {
	r, c1 = baseRepo(t)
	r.add("etcd", "0.9.5")
	c2 = r.commit("etcd 0.9.5")
	r.add("kafka", "3.8.0")
	c3 = r.commit("kafka")
	r.checkout("feature", true)
	r.add("redis", "7.2.0")
	r.commit("redis 7.2.0")
	r.checkout("main", false)
	r.add("nginx", "1.27.0")
	r.commit("nginx")
	return
}

func isShallowClone(t *testing.T, dir string) bool {
	return runGit(t, dir, "rev-parse", "--is-shallow-repository") == "true"
}

func TestShallowCloneWithoutFetch(t *testing.T) {
	needGit(t)
	origin, _, c2, _ := originRepo(t)
	clone := shallowClone(t, origin.dir, 1)
	res := computeIn(t, clone, Options{StateCommit: c2.String()})
	if !res.All || res.BaseFrom != FromState {
		t.Fatalf("shallow clone without fetch: %+v", res)
	}
	wantWarning(t, res, "not in the clone (shallow clone)", "fetch-depth: 0", "GIT_DEPTH: 0", "not enabled")

	// A base inside the shallow history works without fetching.
	clone2 := shallowClone(t, origin.dir, 2)
	origin.checkout("main", false)
	headMinus1 := runGit(t, clone2, "rev-parse", "HEAD~1")
	res = computeIn(t, clone2, Options{StateCommit: headMinus1})
	wantChanges(t, res, Change{Artifact: "nginx", Version: "1.27.0", Kind: Added, Path: pkgPath("nginx", "1.27.0")})
	if res.Fetched || !isShallowClone(t, clone2) {
		t.Error("fetched although the base was in the shallow history")
	}
}

func TestShallowCloneDeepenGoGit(t *testing.T) {
	needGit(t)
	withFetchers(t, true, "") // go-git only
	origin, _, c2, _ := originRepo(t)
	clone := shallowClone(t, origin.dir, 1)
	res := computeIn(t, clone, Options{StateCommit: c2.String(), Fetch: true})
	wantChanges(t, res,
		Change{Artifact: "kafka", Version: "3.8.0", Kind: Added, Path: pkgPath("kafka", "3.8.0")},
		Change{Artifact: "nginx", Version: "1.27.0", Kind: Added, Path: pkgPath("nginx", "1.27.0")})
	if !res.Fetched || res.Base != c2.String() {
		t.Errorf("fetched %v base %s", res.Fetched, res.Base)
	}
	// The clone is complete for git too: the shallow file was repaired.
	if isShallowClone(t, clone) {
		t.Error("git still sees a shallow clone")
	}
	if n := runGit(t, clone, "rev-list", "--count", "HEAD"); n != "4" {
		t.Errorf("rev-list --count HEAD = %s, want 4", n)
	}
	runGit(t, clone, "fsck", "--no-dangling", "--connectivity-only")
}

func TestShallowCloneDeepenGitCommand(t *testing.T) {
	needGit(t)
	withFetchers(t, false, "git") // the fallback alone
	origin, _, c2, _ := originRepo(t)
	clone := shallowClone(t, origin.dir, 1)
	res := computeIn(t, clone, Options{StateCommit: c2.String(), Fetch: true})
	if len(res.Changes) != 2 || !res.Fetched {
		t.Fatalf("%+v", res)
	}
	if isShallowClone(t, clone) {
		t.Error("still shallow")
	}
}

func TestShallowCloneOriginUnreachable(t *testing.T) {
	needGit(t)
	origin, _, c2, _ := originRepo(t)
	clone := shallowClone(t, origin.dir, 1)
	if err := os.Rename(origin.dir, origin.dir+".gone"); err != nil {
		t.Fatal(err)
	}
	res := computeIn(t, clone, Options{StateCommit: c2.String(), Fetch: true})
	if !res.All || res.Fetched {
		t.Fatalf("unreachable origin: %+v", res)
	}
	wantWarning(t, res, "fetching from origin failed", "fetch-depth: 0")
}

func TestShallowPRMergeBase(t *testing.T) {
	needGit(t)
	origin, _, _, c3 := originRepo(t)
	// A CI checkout of the feature branch only, depth 1: no origin/main.
	clone := shallowClone(t, origin.dir, 1, "--branch", "feature")
	env := map[string]string{"GITHUB_BASE_REF": "main"}
	getenv := func(k string) string { return env[k] }

	res := computeIn(t, clone, Options{PR: true, Getenv: getenv})
	if !res.All {
		t.Fatalf("no target branch in the clone: %+v", res)
	}
	wantWarning(t, res, `target branch "main"`)

	res = computeIn(t, clone, Options{PR: true, Getenv: getenv, Fetch: true})
	if res.BaseFrom != FromMergeBase || res.Base != c3.String() {
		t.Fatalf("base %s from %s, want merge-base %s; warnings %q", res.Base, res.BaseFrom, c3, res.Warnings)
	}
	wantChanges(t, res, Change{Artifact: "redis", Version: "7.2.0", Kind: Added, Path: pkgPath("redis", "7.2.0")})
}

func TestFetchBaseByHash(t *testing.T) {
	needGit(t)
	origin, c1, _, _ := originRepo(t)
	origin.checkout("feature", false)
	origin.add("orphanish", "1.0.0")
	other := origin.commit("only on feature")
	origin.checkout("main", false)
	// A full clone of main only: the feature commit is not in it.
	clone := filepath.Join(t.TempDir(), "clone")
	runGit(t, filepath.Dir(clone), "clone", "--quiet", "--single-branch", "--branch", "main", "file://"+origin.dir, clone)
	res := computeIn(t, clone, Options{Base: other.String(), Fetch: true})
	if res.All || res.Base != other.String() || !res.Fetched {
		t.Fatalf("fetch by hash: %+v", res)
	}
	_ = c1
}

func TestOpenFromSubdirectory(t *testing.T) {
	r, c1 := baseRepo(t)
	r.add("etcd", "0.9.5")
	r.commit("x")
	// The repo is found upward; PackagesDir is relative to Repo.
	res := computeIn(t, r.dir, Options{Repo: filepath.Join(r.dir, "packages"), PackagesDir: ".", StateCommit: c1.String()})
	wantChanges(t, res, Change{Artifact: "etcd", Version: "0.9.5", Kind: Added, Path: pkgPath("etcd", "0.9.5")})
}

func TestSemverOrder(t *testing.T) {
	r, c1 := baseRepo(t)
	r.add("etcd", "0.10.0").add("etcd", "0.9.10").add("apache", "1.0.0")
	r.remove("packages/etcd/0.9.2")
	r.commit("x")
	res := r.compute(Options{StateCommit: c1.String()})
	var got []string
	for _, c := range res.Changes {
		got = append(got, c.Artifact+"@"+c.Version+":"+string(c.Kind))
	}
	if want := "apache@1.0.0:added etcd@0.9.2:removed etcd@0.9.10:added etcd@0.10.0:added"; strings.Join(got, " ") != want {
		t.Errorf("order %q, want %q", strings.Join(got, " "), want)
	}
}

func TestMissingBlob(t *testing.T) {
	r, c1 := baseRepo(t)
	r.add("etcd", "0.9.5")
	r.commit("x")
	// Like a partial clone (--filter=blob:none): the new blob is absent.
	blob := plumbing.ComputeHash(plumbing.BlobObject, []byte(manifestYAML("etcd", "0.9.5", "")))
	if err := os.Remove(filepath.Join(r.dir, ".git", "objects", blob.String()[:2], blob.String()[2:])); err != nil {
		t.Fatal(err)
	}
	res := r.compute(Options{StateCommit: c1.String()})
	if !res.All || len(res.Changes) != 0 {
		t.Fatalf("missing blob: %+v", res)
	}
	wantWarning(t, res, "blob of packages/etcd/0.9.5/manifest.yaml", "is not in the clone")
}
