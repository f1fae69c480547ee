package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestRunApprovalsGitea: a pull-request cluster with approvers against a
// real Gitea server. Without a branch protection requiring them, the run
// says so and how to set it, in the log and the pull request, and does not
// ask for auto-merge; with it, auto-merge is asked for and Gitea does not
// merge until the named user approved through its API; the run after the
// merge records the approver and the listed digests in the cluster's
// state, once.
func TestRunApprovalsGitea(t *testing.T) {
	g := testenv.Gitea(t)
	clone := g.CreateRepo(t, "catalog")
	repo := g.User + "/catalog"
	reviewer, reviewerToken := g.Collaborator(t, "catalog", "write", "write:repository")
	f := newFixture(t)
	f.catalog = g.AuthURL(clone)
	f.run(t)
	f.addOverlays(t, "prod")
	var log syncBuffer
	o := Options{
		Source:   f.source,
		Mirror:   mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog:  catalogOpts(f.catalog),
		Lint:     lint.Config{Severity: map[string]lint.Severity{"bundle/package": lint.Off}},
		Log:      slog.New(slog.NewTextHandler(&log, nil)),
		Declared: []string{"global", "prod"},
		Clusters: []ClusterOptions{{Name: "global", Exclude: []string{"other"}}, {Name: "prod"}},
	}
	o.Catalog.URL, o.Catalog.Username, o.Catalog.Password = clone, g.User, g.Token
	o.Forge = func() (forge.Forge, error) {
		return forge.New(forge.Options{Kind: "gitea", APIURL: g.URL + "/api/v1", Token: g.Token, CatalogURL: clone})
	}
	ctx := context.Background()
	run := func(what string) *Result {
		t.Helper()
		res, err := Run(ctx, o)
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, log.String())
		}
		return res
	}
	run("prod's first catalog, by push")
	o.Clusters[1].Delivery = DeliveryPullRequest
	o.Clusters[1].PullRequest = PullRequestOptions{AutoMerge: "merge", Approvers: []forge.Approvers{{Users: []string{reviewer}}}}
	getPR := func(n int) giteaPR {
		t.Helper()
		var pr giteaPR
		if _, err := g.Do(ctx, http.MethodGet, fmt.Sprintf("/repos/%s/pulls/%d", repo, n), nil, &pr); err != nil {
			t.Fatal(err)
		}
		return pr
	}

	// 1. No protection: said in the log and the body, with how; no
	// auto-merge asked for.
	f.addOther(t)
	pr := run("other added").Clusters[1].PullRequest
	if pr == nil || pr.Action != "opened" || !strings.Contains(pr.Unrequired, "no protection rule") {
		t.Fatalf("unprotected: %+v", pr)
	}
	if s := log.String(); !strings.Contains(s, "does not require their approval") || !strings.Contains(s, "approvals_whitelist_username") || !strings.Contains(s, "auto-merge (merge) is not asked for") {
		t.Fatalf("the log does not say what is missing and how:\n%s", s)
	}
	got := getPR(pr.Number)
	if got.Merged || !strings.Contains(got.Body, "@"+reviewer) || !strings.Contains(got.Body, "does not require these approvals") || !strings.Contains(got.Body, "Required approvals") {
		t.Fatalf("pull request without protection: %+v", got)
	}

	// 2. The protection requires the reviewer's approval: auto-merge is
	// asked for, and Gitea waits for the approval.
	if _, err := g.Do(ctx, http.MethodPost, "/repos/"+repo+"/branch_protections", map[string]any{
		"rule_name": "main", "enable_push": true, "required_approvals": 1,
		"enable_approvals_whitelist": true, "approvals_whitelist_username": []string{reviewer},
	}, nil); err != nil {
		t.Fatal(err)
	}
	f.pushVersion(t, "1.2.0")
	f.writeManifest(t, "tiny", "1.2.0")
	f.commit(t, "tiny 1.2.0")
	res := run("tiny 1.2.0")
	pr = res.Clusters[1].PullRequest
	if pr.Action != "updated" || pr.Unrequired != "" || !strings.Contains(log.String(), "requires the approval of the approvers of cluster prod") {
		t.Fatalf("protected: %+v\n%s", pr, log.String())
	}
	main := remoteHead(t, f.catalog, "main")
	g.WaitBranch(t, repo, "publish/prod", pr.Commit)
	if got := getPR(pr.Number); got.Merged || got.State != "open" || !strings.Contains(got.Body, "requires their approval") {
		t.Fatalf("merged before the approval: %+v", got)
	}
	// A run later (Gitea's merge queue had its time), still open: the
	// scheduled merge waits for the approval; nothing to record. (The pull
	// request is rendered again on main, which global's commit moved.)
	res = run("before the approval")
	if before := res.Clusters[1].PullRequest; res.Commit != "" || before.Number != pr.Number || before.Approval != nil {
		t.Fatalf("before the approval: commit %q, %+v", res.Commit, before)
	} else if before.Commit != "" {
		pr = before
		g.WaitBranch(t, repo, "publish/prod", pr.Commit)
	}
	if got := getPR(pr.Number); got.Merged || remoteHead(t, f.catalog, "main") != main {
		t.Fatalf("merged before the approval: %+v", got)
	}
	if _, err := g.DoToken(ctx, reviewerToken, http.MethodPost, fmt.Sprintf("/repos/%s/pulls/%d/reviews", repo, pr.Number), map[string]any{"event": "APPROVED", "body": "lgtm", "commit_id": pr.Commit}, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !getPR(pr.Number).Merged {
		if time.Now().After(deadline) {
			t.Fatalf("not merged a minute after the approval: %+v", getPR(pr.Number))
		}
		<-tick.C
	}

	// 3. The next run records the approver and the digests, once.
	res = run("after the merge")
	if res.Commit == "" || res.Commit == main {
		t.Fatalf("no record commit: %+v", res)
	}
	state := remoteFile(t, f.catalog, "main", "publish/state/prod.yaml")
	if !strings.Contains(state, "approvers:\n  - "+reviewer) || !strings.Contains(state, fmt.Sprintf("pullRequest: %d", pr.Number)) ||
		!strings.Contains(state, "digests:\n  - artifact: other") || !strings.Contains(state, "version: 1.2.0") {
		t.Fatalf("prod's state:\n%s", state)
	}
	if res := run("again"); res.Commit != "" {
		t.Fatalf("the record was written again: %s", res.Commit)
	}
}
