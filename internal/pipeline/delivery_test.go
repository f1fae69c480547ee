package pipeline

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/forge/forgetest"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
)

// branchHead returns the commit of branch in the bare catalog repo at dir
// ("" when it does not exist).
func branchHead(t *testing.T, dir, branch string) string {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return ""
	}
	return ref.Hash().String()
}

// fileAt reads p at commit h of the catalog repo at dir ("" when absent).
func fileAt(t *testing.T, dir, h, p string) string {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(h))
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.File(p)
	if err != nil {
		return ""
	}
	s, _ := f.Contents()
	return s
}

// mergeBranch merges branch into main of the bare catalog repo at dir as
// a forge's merge button does: a merge commit with both parents and the
// branch's tree (the branch holds only the cluster's files, so the merge
// has no conflict).
func mergeBranch(t *testing.T, dir, branch string) string {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	mainRef, _ := repo.Reference("refs/heads/main", true)
	head, _ := repo.CommitObject(plumbing.NewHash(branchHead(t, dir, branch)))
	if head.ParentHashes[0] != mainRef.Hash() {
		t.Fatalf("%s is not on main's tip: a fast merge is all this helper does", branch)
	}
	sig := object.Signature{Name: "reviewer", Email: "reviewer@example.com", When: time.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: "Merge " + branch, TreeHash: head.TreeHash, ParentHashes: []plumbing.Hash{mainRef.Hash(), head.Hash}}
	obj := repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", h)); err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// pushOver commits a hand edit of p on branch of the catalog repo at dir
// (someone else pushing to the pull request's branch) and returns it.
func pushOver(t *testing.T, dir, branch, p, content string) string {
	t.Helper()
	work := t.TempDir()
	repo, err := git.PlainClone(work, false, &git.CloneOptions{URL: dir, ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(filepath.Join(work, p)), 0o755)
	os.WriteFile(filepath.Join(work, p), []byte(content), 0o644)
	wt, _ := repo.Worktree()
	wt.Add(p)
	sig := &object.Signature{Name: "someone", Email: "someone@example.com", When: time.Now()}
	h, err := wt.Commit("hand edit", &git.CommitOptions{Author: sig})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// TestRunPullRequestGitHub: two clusters in one run, global pushing to
// main and prod delivering by pull request, against the GitHub contract
// fake: the first change opens one pull request from publish/prod with
// the plan in its body (the branch one commit on main, main untouched by
// prod); a rerun without change does nothing; a second source change
// updates the same pull request; a commit someone else pushed to the
// branch is rendered over with a note; a change that removes prod's
// difference closes it; after a merge the next run is a no-op. A token
// without rights stops the run before anything reaches main.
func TestRunPullRequestGitHub(t *testing.T) {
	f := newFixture(t)
	f.run(t) // global, published by push
	f.addOverlays(t, "prod")
	gh := forgetest.NewGitHub(t, "org/catalog")
	var log syncBuffer
	planDir := t.TempDir()
	o := Options{
		Source:   f.source,
		Mirror:   mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog:  catalogOpts(f.catalog),
		Lint:     lint.Config{Severity: map[string]lint.Severity{"bundle/package": lint.Off}},
		Log:      slog.New(slog.NewTextHandler(&log, nil)),
		Declared: []string{"global", "prod"},
		Clusters: []ClusterOptions{
			{Name: "global", Exclude: []string{"other"}},
			{Name: "prod", Delivery: DeliveryPullRequest, PullRequest: PullRequestOptions{Labels: []string{"publish", "prod"}}},
		},
		Forge: func() (forge.Forge, error) {
			return forge.New(forge.Options{Kind: "github", APIURL: gh.URL(), Repo: gh.Repo(), Token: gh.Token()})
		},
		PlanDir: planDir,
		JobURL:  "https://ci.example.com/jobs/1",
	}
	ctx := context.Background()
	// prod is published once by push; from now on it takes pull requests.
	o.Clusters[1].Delivery = DeliveryPush
	if _, err := Run(ctx, o); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	o.Clusters[1].Delivery = DeliveryPullRequest
	mainBefore := branchHead(t, f.catalog, "main")

	// 1. other is added, which global excludes: proposed to prod only.
	f.addOther(t)
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	if got := branchHead(t, f.catalog, "main"); got != mainBefore || res.Commit != "" {
		t.Fatalf("main moved (%s -> %s, commit %q): prod delivers by pull request and global did not change", mainBefore, got, res.Commit)
	}
	pr := res.Clusters[1].PullRequest
	if pr == nil || pr.Action != "opened" || pr.Number == 0 || pr.Branch != "publish/prod" {
		t.Fatalf("prod's pull request: %+v", pr)
	}
	head := branchHead(t, f.catalog, "publish/prod")
	if head == "" || head != pr.Commit {
		t.Fatalf("publish/prod at %q, run says %q", head, pr.Commit)
	}
	if s := fileAt(t, f.catalog, head, "rendered/prod/other/artifact_other.yaml"); !strings.Contains(s, "present: true") {
		t.Errorf("publish/prod lacks prod's catalog:\n%s", s)
	}
	if fileAt(t, f.catalog, head, "publish/state/prod.yaml") == "" {
		t.Error("publish/prod has no state file of prod")
	}
	prs := gh.PRs()
	if len(prs) != 1 || prs[0].State != "open" || prs[0].Head != "publish/prod" || prs[0].Base != "main" {
		t.Fatalf("forge pull requests: %+v", prs)
	}
	for _, want := range []string{"on cluster prod", "list 1"} {
		if !strings.Contains(prs[0].Title, want) {
			t.Errorf("title %q lacks %q", prs[0].Title, want)
		}
	}
	for _, want := range []string{"## publish plan", "| `other` | listed |", "### Lint", "rendered/prod", "```diff", "https://ci.example.com/jobs/1", "prod.md", "<!-- publish:pull-request cluster=prod head=" + head} {
		if !strings.Contains(prs[0].Body, want) {
			t.Errorf("body lacks %q:\n%s", want, prs[0].Body)
		}
	}
	if strings.Join(prs[0].Labels, ",") != "publish,prod" {
		t.Errorf("labels %v", prs[0].Labels)
	}
	if _, err := os.Stat(filepath.Join(planDir, "prod.json")); err != nil {
		t.Errorf("full plan: %v", err)
	}
	gh.SetHead("publish/prod", head) // the fake learns the branch's commit

	// 2. Nothing changed: the open pull request already proposes this.
	res, err = Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if pr := res.Clusters[1].PullRequest; pr == nil || pr.Action != "unchanged" || branchHead(t, f.catalog, "publish/prod") != head {
		t.Fatalf("rerun: %+v", pr)
	}

	// 3. A new version: global gets its commit on main; the same pull
	// request is updated with prod's new render.
	f.pushVersion(t, "1.2.0")
	f.writeManifest(t, "tiny", "1.2.0")
	f.commit(t, "tiny 1.2.0")
	res, err = Run(ctx, o)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	if res.Commit == "" || branchHead(t, f.catalog, "main") != res.Commit || res.Clusters[0].Commit != res.Commit {
		t.Fatalf("global's commit: %+v", res.Clusters[0])
	}
	for _, p := range res.Files {
		if strings.Contains(p, "prod") {
			t.Errorf("main's commit changed %s, a file of prod", p)
		}
	}
	pr = res.Clusters[1].PullRequest
	if pr.Action != "updated" || pr.Number != prs[0].Number {
		t.Fatalf("second change: %+v", pr)
	}
	if n := len(gh.PRs()); n != 1 {
		t.Fatalf("%d pull requests, want the same one", n)
	}
	head = branchHead(t, f.catalog, "publish/prod")
	if s := fileAt(t, f.catalog, head, "rendered/prod/tiny/artifactversion_tiny.v1.2.0.yaml"); !strings.Contains(s, "present: true") {
		t.Errorf("the update lacks tiny 1.2.0:\n%s", s)
	}
	gh.SetHead("publish/prod", head)

	// 4. Someone pushes to the branch: rendered over, with a note.
	theirs := pushOver(t, f.catalog, "publish/prod", "rendered/prod/tiny/artifact_tiny.yaml", "hand: edit\n")
	gh.SetHead("publish/prod", theirs)
	res, err = Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	pr = res.Clusters[1].PullRequest
	if pr.Action != "updated" || pr.Replaced != theirs {
		t.Fatalf("after someone's push: %+v", pr)
	}
	head = branchHead(t, f.catalog, "publish/prod")
	if s := fileAt(t, f.catalog, head, "rendered/prod/tiny/artifact_tiny.yaml"); strings.Contains(s, "hand: edit") {
		t.Error("the hand edit survived the run")
	}
	if cs := gh.Comments(pr.Number); len(cs) != 1 || !strings.Contains(cs[0], theirs) {
		t.Errorf("comments: %q", cs)
	}
	gh.SetHead("publish/prod", head)

	// 5. The source goes back to what prod has: the pull request is
	// closed and its branch removed; global delists tiny 1.2.0 on main.
	os.RemoveAll(filepath.Join(f.source, "packages/tiny/1.2.0"))
	os.RemoveAll(filepath.Join(f.source, "packages/other"))
	f.commit(t, "back")
	res, err = Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if pr := res.Clusters[1].PullRequest; pr.Action != "closed" || res.Clusters[0].Commit == "" {
		t.Fatalf("prod no longer differs: %+v; global %+v", pr, res.Clusters[0])
	}
	if prs := gh.PRs(); prs[0].State != "closed" {
		t.Fatalf("pull request: %+v", prs[0])
	}
	if branchHead(t, f.catalog, "publish/prod") != "" {
		t.Error("the closed pull request's branch is still there")
	}

	// 6. A new change is proposed, merged, and the next run is a no-op.
	f.addOther(t)
	res, err = Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	pr = res.Clusters[1].PullRequest
	if pr.Action != "opened" {
		t.Fatalf("after the close: %+v", pr)
	}
	gh.SetHead("publish/prod", pr.Commit)
	gh.Merge(pr.Number)
	mergeBranch(t, f.catalog, "publish/prod")
	main := branchHead(t, f.catalog, "main")
	res, err = Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit != "" || branchHead(t, f.catalog, "main") != main || res.Clusters[1].PullRequest.Action != "" {
		t.Fatalf("after the merge: commit %q, prod %+v", res.Commit, res.Clusters[1].PullRequest)
	}

	// 7. A token that may read but not write: the run stops before
	// anything is mirrored or reaches main, naming the permission.
	ro := forgetest.NewGitHub(t, "org/catalog", forgetest.ReadOnly())
	o.Forge = func() (forge.Forge, error) {
		return forge.New(forge.Options{Kind: "github", APIURL: ro.URL(), Repo: ro.Repo(), Token: ro.Token()})
	}
	f.pushVersion(t, "1.3.0")
	f.writeManifest(t, "tiny", "1.3.0")
	f.commit(t, "tiny 1.3.0")
	_, err = Run(ctx, o)
	if err == nil || !strings.Contains(err.Error(), "Pull requests") || strings.Contains(err.Error(), ro.Token()) {
		t.Fatalf("read-only token: %v", err)
	}
	if branchHead(t, f.catalog, "main") != main {
		t.Error("main moved although the forge refused")
	}
}

// TestRunMergeRequestGitLab: the same delivery through GitLab's contract
// fake, two clusters in one run, one push and one pull-request: the merge
// request is opened from publish/edge with labels and auto-merge, then
// updated in place by the next change; main gets only the push cluster's
// commit.
func TestRunMergeRequestGitLab(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	f.addOverlays(t, "edge")
	gl := forgetest.NewGitLab(t, "platform/ops/catalog", forgetest.Mergeable())
	o := Options{
		Source:   f.source,
		Mirror:   mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog:  catalogOpts(f.catalog),
		Lint:     lint.Config{Severity: map[string]lint.Severity{"bundle/package": lint.Off}},
		Declared: []string{"global", "edge"},
		Clusters: []ClusterOptions{
			{Name: "global"},
			{Name: "edge", Delivery: DeliveryPullRequest, PullRequest: PullRequestOptions{Labels: []string{"catalog"}, AutoMerge: "squash"}},
		},
		Forge: func() (forge.Forge, error) {
			return forge.New(forge.Options{Kind: "gitlab", APIURL: gl.URL(), Repo: gl.Repo(), Token: gl.Token()})
		},
	}
	ctx := context.Background()
	// The new overlay changes global's render key: published first.
	o.Clusters[1].Delivery = DeliveryPush
	o.Clusters[1].Exclude = []string{"*"}
	if _, err := Run(ctx, o); err != nil {
		t.Fatal(err)
	}
	o.Clusters[1].Delivery, o.Clusters[1].Exclude = DeliveryPullRequest, nil
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	mr := res.Clusters[1].PullRequest
	if res.Commit != "" || mr == nil || mr.Action != "opened" {
		t.Fatalf("first run: commit %q (%v), merge request %+v", res.Commit, res.Files, mr)
	}
	if got := gl.AutoMerge(mr.Number); got == "" {
		t.Error("auto-merge was not asked for")
	}
	gl.SetHead("publish/edge", mr.Commit)
	f.addOther(t)
	res, err = Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Clusters[0].Commit == "" || res.Commit != branchHead(t, f.catalog, "main") {
		t.Fatalf("global's commit: %+v", res.Clusters[0])
	}
	if again := res.Clusters[1].PullRequest; again.Action != "updated" || again.Number != mr.Number {
		t.Fatalf("second run: %+v", again)
	}
	mrs := gl.PRs()
	if len(mrs) != 1 || !strings.Contains(mrs[0].Body, "| `other` | listed |") || strings.Join(mrs[0].Labels, ",") != "catalog" {
		t.Fatalf("merge requests: %+v", mrs)
	}
}
