package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/forge/forgetest"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
)

// TestRunApprovalsGitLab: a pull-request cluster with approvers, run
// after run, against GitLab's contract fake (which fails the test on any
// request outside the documented endpoints) and a real catalog repo. The
// run reads the project's approval rules, finds the catalog branch's rule
// naming the approver, says so, and asks for auto-merge
// (merge_when_pipeline_succeeds and auto_merge, at the head it saw);
// GitLab does not merge on the pipeline's success before the approver
// approved. Merged (a merge commit on the catalog branch, as GitLab writes
// it), the next run reads the merged merge request and its approvals
// (.../approvals, approved_by) and records the approver and the digest
// the merge listed in the cluster's state, once.
func TestRunApprovalsGitLab(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	f.addOverlays(t, "edge")
	gl := forgetest.NewGitLab(t, "platform/catalog")
	var log syncBuffer
	o := f.deliveryOptions(&log, []string{"global", "edge"}, ClusterOptions{Name: "global", Exclude: []string{"other"}}, ClusterOptions{Name: "edge"})
	o.Forge = func() (forge.Forge, error) { return forge.New(gl.Options()) }
	ctx := context.Background()
	run := func(what string) *Result {
		t.Helper()
		res, err := Run(ctx, o)
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, log.String())
		}
		return res
	}
	run("edge's first catalog, by push")
	o.Clusters[1].Delivery = DeliveryPullRequest
	o.Clusters[1].PullRequest = PullRequestOptions{AutoMerge: "merge", Approvers: []forge.Approvers{{Users: []string{"alice"}}}}
	gl.AddApprovalRule("catalog owners", 1, "main", []string{"alice"}, nil)

	f.addOther(t)
	mr := run("other added").Clusters[1].PullRequest
	if mr == nil || mr.Action != "opened" || mr.Unrequired != "" || !strings.Contains(log.String(), "requires the approval of the approvers of cluster edge") {
		t.Fatalf("merge request: %+v\n%s", mr, log.String())
	}
	if body := gl.PRs()[0].Body; !strings.Contains(body, "- @alice, for every artifact") || !strings.Contains(body, "requires their approval") {
		t.Fatalf("the body does not name the approver:\n%s", body)
	}
	var accept map[string]any
	if merges := glRequests(gl, http.MethodPut, fmt.Sprintf("/merge_requests/%d/merge", mr.Number)); len(merges) != 1 {
		t.Fatalf("auto-merge requests: %v", merges)
	} else if err := json.Unmarshal([]byte(merges[0].Body), &accept); err != nil || accept["auto_merge"] != true || accept["merge_when_pipeline_succeeds"] != true || accept["sha"] != gl.PRs()[0].HeadSHA {
		t.Fatalf("auto-merge request %s (%v)", merges[0].Body, err)
	}
	if len(glRequests(gl, http.MethodGet, "/approval_rules")) == 0 {
		t.Error("the run did not read the approval rules")
	}
	if gl.PipelineSucceeded(mr.Number) {
		t.Fatal("GitLab merged on the pipeline's success before alice approved")
	}
	gl.Approve(mr.Number, "alice")
	if gl.PRs()[0].State != "merged" {
		t.Fatal("not merged after alice's approval")
	}
	merge := mergeBranch(t, f.catalog, "publish/edge")
	gl.SetMergeCommit(mr.Number, merge)

	res := run("after the merge")
	if res.Commit == "" || res.Commit == merge {
		t.Fatalf("no record commit: %+v\n%s", res, log.String())
	}
	st, err := gitops.ParseState(gitops.StatePath("edge"), []byte(f.catalogFile(t, gitops.StatePath("edge"))))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Approvals) != 1 {
		t.Fatalf("edge's approvals: %+v", st.Approvals)
	}
	rec := st.Approvals[0]
	if rec.PullRequest != mr.Number || rec.Commit != merge || rec.MergedAt == "" || strings.Join(rec.Approvers, ",") != "alice" ||
		len(rec.Digests) == 0 || slices.ContainsFunc(rec.Digests, func(d model.ApprovedDigest) bool { return d.Artifact != "other" }) {
		t.Fatalf("edge's record: %+v", rec)
	}
	if got := glRequests(gl, http.MethodGet, fmt.Sprintf("/merge_requests/%d/approvals", mr.Number)); len(got) == 0 {
		t.Error("the run did not read the merge request's approvals")
	}
	if res := run("again"); res.Commit != "" {
		t.Fatalf("the record was written again: %s", res.Commit)
	}
}

// glRequests are the requests of method the GitLab fake answered whose
// path ends with suffix.
func glRequests(gl *forgetest.GitLab, method, suffix string) []forgetest.Request {
	var out []forgetest.Request
	for _, r := range gl.Requests() {
		if r.Method == method && strings.HasSuffix(r.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}
