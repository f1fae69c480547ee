package pipeline

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
)

// TestRunApprovalsGitea: a pull-request cluster with approvers against a
// real Gitea server. Without a branch protection requiring them, the run
// says so and how to set it, in the log and the pull request, and does not
// ask for auto-merge; with it, auto-merge is asked for and Gitea does not
// merge until the named user approved through its API; the run after the
// merge records the approver and the digests the pull request listed in
// the cluster's state, once. A second pull request that lists one version
// is recorded with that version's digest alone.
func TestRunApprovalsGitea(t *testing.T) {
	f := newFixture(t)
	gc := newGiteaCatalog(t, f, "prod")
	repo := gc.repo
	reviewer, reviewerToken := gc.g.Collaborator(t, "catalog", "write", "write:repository")
	o := gc.options(f, []string{"global", "prod"}, ClusterOptions{Name: "global", Exclude: []string{"other"}}, ClusterOptions{Name: "prod"})
	ctx := context.Background()
	run := func(what string) *Result { t.Helper(); return gc.run(t, o, what) }
	run("prod's first catalog, by push")
	listed := prodRecord(t, f.catalog, nil).Digests // tiny 1.1.0, listed by push
	o.Clusters[1].Delivery = DeliveryPullRequest
	o.Clusters[1].PullRequest = PullRequestOptions{AutoMerge: "merge", Approvers: []forge.Approvers{{Users: []string{reviewer}}}}

	// 1. No protection: said in the log and the body, with how; no
	// auto-merge asked for.
	f.addOther(t)
	pr := run("other added").Clusters[1].PullRequest
	if pr == nil || pr.Action != "opened" || !strings.Contains(pr.Unrequired, "no protection rule") {
		t.Fatalf("unprotected: %+v", pr)
	}
	if s := gc.log.String(); !strings.Contains(s, "does not require their approval") || !strings.Contains(s, "approvals_whitelist_username") || !strings.Contains(s, "auto-merge (merge) is not asked for") {
		t.Fatalf("the log does not say what is missing and how:\n%s", s)
	}
	got := gc.pr(t, pr.Number)
	if got.Merged || !strings.Contains(got.Body, "@"+reviewer) || !strings.Contains(got.Body, "does not require these approvals") || !strings.Contains(got.Body, "Required approvals") {
		t.Fatalf("pull request without protection: %+v", got)
	}

	// 2. The protection requires the reviewer's approval: auto-merge is
	// asked for, and Gitea waits for the approval.
	if _, err := gc.g.Do(ctx, http.MethodPost, "/repos/"+repo+"/branch_protections", map[string]any{
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
	if pr.Action != "updated" || pr.Unrequired != "" || !strings.Contains(gc.log.String(), "requires the approval of the approvers of cluster prod") {
		t.Fatalf("protected: %+v\n%s", pr, gc.log.String())
	}
	main := remoteHead(t, f.catalog, "main")
	gc.g.WaitBranch(t, repo, "publish/prod", pr.Commit)
	if got := gc.pr(t, pr.Number); got.Merged || got.State != "open" || !strings.Contains(got.Body, "requires their approval") {
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
		gc.g.WaitBranch(t, repo, "publish/prod", pr.Commit)
	}
	if got := gc.pr(t, pr.Number); got.Merged || remoteHead(t, f.catalog, "main") != main {
		t.Fatalf("merged before the approval: %+v", got)
	}
	gc.approve(t, reviewerToken, pr.Number, pr.Commit)
	gc.waitMerged(t, pr.Number)

	// 3. The next run records the approver and the digests the pull
	// request listed (other's and tiny 1.2.0's, not tiny 1.1.0's, which
	// prod listed before), once.
	res = run("after the merge")
	if res.Commit == "" || res.Commit == main {
		t.Fatalf("no record commit: %+v", res)
	}
	rec := prodRecord(t, f.catalog, &pr.Number)
	if !strings.Contains(gc.log.String(), "listing 2 bundle digests") || !strings.Contains(gc.log.String(), "fetching the history of the catalog branch main to read what #") || fmt.Sprint(rec.Approvers) != "["+reviewer+"]" || len(rec.Digests) != 2 ||
		rec.Digests[0].Artifact != "other" || rec.Digests[1] != (model.ApprovedDigest{Artifact: "tiny", Version: "1.2.0", BundleDigest: digestIn(t, f.catalog, "tiny", "1.2.0")}) {
		t.Fatalf("prod's record of #%d: %+v (prod listed %+v before)\n%s", pr.Number, rec, listed, gc.log.String())
	}
	if res := run("again"); res.Commit != "" {
		t.Fatalf("the record was written again: %s", res.Commit)
	}

	// 4. A second pull request lists tiny 1.3.0 alone: its record names
	// that digest only.
	f.pushVersion(t, "1.3.0")
	f.writeManifest(t, "tiny", "1.3.0")
	f.commit(t, "tiny 1.3.0")
	second := run("tiny 1.3.0").Clusters[1].PullRequest
	if second.Action != "opened" || second.Number == pr.Number {
		t.Fatalf("second pull request: %+v", second)
	}
	gc.g.WaitBranch(t, repo, "publish/prod", second.Commit)
	gc.approve(t, reviewerToken, second.Number, second.Commit)
	gc.waitMerged(t, second.Number)
	run("after the second merge")
	rec = prodRecord(t, f.catalog, &second.Number)
	if want := (model.ApprovedDigest{Artifact: "tiny", Version: "1.3.0", BundleDigest: digestIn(t, f.catalog, "tiny", "1.3.0")}); len(rec.Digests) != 1 || rec.Digests[0] != want || want.BundleDigest == "" {
		t.Fatalf("prod's record of #%d: %+v, want %+v alone", second.Number, rec.Digests, want)
	}
}

// prodRecord reads prod's state at the tip of the catalog at url: the
// approval record of pull request *number, or (number nil) a record of
// every version prod lists. It fails t when there is no such record.
func prodRecord(t *testing.T, url string, number *int) model.ApprovalRecord {
	t.Helper()
	st, err := gitops.ParseState(gitops.StatePath("prod"), []byte(remoteFile(t, url, "main", gitops.StatePath("prod"))))
	if err != nil {
		t.Fatal(err)
	}
	if number == nil {
		var all []model.ApprovedDigest
		for _, a := range st.Artifacts {
			for _, v := range a.Versions {
				if a.Present && v.Present {
					all = append(all, model.ApprovedDigest{Artifact: a.Name, Version: v.Version, BundleDigest: v.BundleDigest})
				}
			}
		}
		return model.ApprovalRecord{Digests: all}
	}
	for _, r := range st.Approvals {
		if r.PullRequest == *number {
			return r
		}
	}
	t.Fatalf("prod's state records no approval of #%d: %+v", *number, st.Approvals)
	return model.ApprovalRecord{}
}

// digestIn is the bundle digest prod's state at the tip of the catalog at
// url records for version v of artifact art ("" when none).
func digestIn(t *testing.T, url, art, v string) string {
	t.Helper()
	for _, d := range prodRecord(t, url, nil).Digests {
		if d.Artifact == art && d.Version == v {
			return d.BundleDigest
		}
	}
	return ""
}
