package pipeline

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunPullRequestGitea: pull-request delivery against a real Gitea
// server: the catalog repo lives on Gitea, global
// pushes to main and prod takes pull requests, in the same runs. The first
// change opens a pull request with the plan in its body; a rerun does
// nothing; a second change updates the same one while global's commit
// lands on main; a push by someone else to the branch is rendered over
// with a note; a change that removes prod's difference closes it; a new
// change merged through the API makes the next run a no-op; a read-only
// token stops the run with main untouched.
func TestRunPullRequestGitea(t *testing.T) {
	f := newFixture(t)
	gc := newGiteaCatalog(t, f, "prod") // seeds the catalog on Gitea: global, by push
	g, repo := gc.g, gc.repo
	o := gc.options(f, []string{"global", "prod"}, ClusterOptions{Name: "global", Exclude: []string{"other"}}, ClusterOptions{Name: "prod", Delivery: DeliveryPush})
	o.PlanDir = t.TempDir()
	ctx := context.Background()
	gc.run(t, o, "prod's first catalog, by push")
	o.Clusters[1].Delivery = DeliveryPullRequest
	o.Clusters[1].PullRequest.Labels = []string{"operators"}
	getPR := func(n int) giteaPR { t.Helper(); return gc.pr(t, n) }
	run := func(what string) *Result { t.Helper(); return gc.run(t, o, what) }

	// 1. other, which global excludes: a pull request for prod only.
	main := remoteHead(t, f.catalog, "main")
	f.addOther(t)
	res := run("other added")
	pr := res.Clusters[1].PullRequest
	if res.Commit != "" || remoteHead(t, f.catalog, "main") != main || pr == nil || pr.Action != "opened" {
		t.Fatalf("first proposal: commit %q, prod %+v", res.Commit, pr)
	}
	got := getPR(pr.Number)
	if got.State != "open" || got.Head.Ref != "publish/prod" || got.Head.Sha != pr.Commit || !strings.Contains(got.Title, "on cluster prod") ||
		!strings.Contains(got.Body, "| `other` | listed |") || !strings.Contains(got.Body, "```diff") || len(got.Labels) != 1 || got.Labels[0].Name != "operators" {
		t.Fatalf("Gitea's pull request: %+v", got)
	}
	number := pr.Number

	// 2. A rerun without change leaves it as it is.
	if pr := run("rerun").Clusters[1].PullRequest; pr.Action != "unchanged" || remoteHead(t, f.catalog, "publish/prod") != got.Head.Sha {
		t.Fatalf("rerun: %+v", pr)
	}

	// 3. tiny 1.2.0: global's commit on main, prod's pull request updated.
	f.pushVersion(t, "1.2.0")
	f.writeManifest(t, "tiny", "1.2.0")
	f.commit(t, "tiny 1.2.0")
	res = run("tiny 1.2.0")
	if res.Commit == "" || remoteHead(t, f.catalog, "main") != res.Commit {
		t.Fatalf("global's commit: %q", res.Commit)
	}
	if pr := res.Clusters[1].PullRequest; pr.Action != "updated" || pr.Number != number {
		t.Fatalf("update: %+v", pr)
	}
	if s := remoteFile(t, f.catalog, "publish/prod", "rendered/prod/tiny/artifactversion_tiny.v1.2.0.yaml"); !strings.Contains(s, "present: true") {
		t.Errorf("the updated branch lacks tiny 1.2.0:\n%s", s)
	}

	// 4. Someone pushes to the branch: rendered over, with a comment.
	theirs := pushOver(t, f.catalog, "publish/prod", "rendered/prod/tiny/artifact_tiny.yaml", "hand: edit\n")
	res = run("after someone's push")
	if pr := res.Clusters[1].PullRequest; pr.Action != "updated" || pr.Replaced != theirs {
		t.Fatalf("someone's push: %+v", pr)
	}
	if s := remoteFile(t, f.catalog, "publish/prod", "rendered/prod/tiny/artifact_tiny.yaml"); strings.Contains(s, "hand: edit") {
		t.Error("the hand edit survived")
	}
	var comments []struct {
		Body string `json:"body"`
	}
	if _, err := g.Do(ctx, http.MethodGet, fmt.Sprintf("/repos/%s/issues/%d/comments", repo, number), nil, &comments); err != nil || len(comments) != 1 || !strings.Contains(comments[0].Body, theirs) {
		t.Errorf("comments (%v): %+v", err, comments)
	}

	// 5. Back to what prod has: closed, branch removed; global delists
	// tiny 1.2.0 on main.
	os.RemoveAll(filepath.Join(f.source, "packages/tiny/1.2.0"))
	os.RemoveAll(filepath.Join(f.source, "packages/other"))
	f.commit(t, "back")
	res = run("back")
	if pr := res.Clusters[1].PullRequest; pr.Action != "closed" || res.Clusters[0].Commit == "" {
		t.Fatalf("back: prod %+v, global %+v", pr, res.Clusters[0])
	}
	if got := getPR(number); got.State != "closed" || got.Merged {
		t.Fatalf("closed pull request: %+v", got)
	}
	if remoteHead(t, f.catalog, "publish/prod") != "" {
		t.Error("the closed pull request's branch is still there")
	}

	// 6. A new proposal, merged through the API: the next run is a no-op.
	f.addOther(t)
	pr = run("other again").Clusters[1].PullRequest
	if pr.Action != "opened" || pr.Number == number {
		t.Fatalf("new proposal: %+v", pr)
	}
	g.Merge(t, repo, pr.Number)
	main = remoteHead(t, f.catalog, "main")
	if s := remoteFile(t, f.catalog, "main", "rendered/prod/other/artifact_other.yaml"); !strings.Contains(s, "present: true") {
		t.Fatalf("the merge did not bring prod's change:\n%s", s)
	}
	res = run("after the merge")
	if res.Commit != "" || remoteHead(t, f.catalog, "main") != main || res.Clusters[1].PullRequest.Action != "" {
		t.Fatalf("after the merge: commit %q, prod %+v", res.Commit, res.Clusters[1].PullRequest)
	}

	// 7. A token that may only read: stopped before anything reaches main,
	// naming the scope needed.
	gc.token = g.ReadOnlyToken(t, "catalog")
	f.pushVersion(t, "1.3.0")
	f.writeManifest(t, "tiny", "1.3.0")
	f.commit(t, "tiny 1.3.0")
	_, err := Run(ctx, o)
	if err == nil || !strings.Contains(err.Error(), "write:repository") || strings.Contains(err.Error(), gc.token) {
		t.Fatalf("read-only token: %v", err)
	}
	if remoteHead(t, f.catalog, "main") != main {
		t.Error("main moved although the forge refused")
	}
}
