package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/forge/forgetest"
)

// TestProposeApprovalsGitHub: a proposal with approvers on GitHub's
// contract fake. Without the protection requiring them, the body and the
// log say so and how, and auto-merge is not asked for; with the
// protection and CODEOWNERS naming them, the body says the forge waits for
// them and auto-merge is asked for; after the merge, the next proposal
// reads who approved the merged pull request.
func TestProposeApprovalsGitHub(t *testing.T) {
	ctx := context.Background()
	dir := newCatalog(t)
	gh := forgetest.NewGitHub(t, "org/catalog")
	f, p, log := approvalProposal(t, gh.Options(), "squash")
	res, err := Propose(ctx, f, openTip(t, dir), p)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	body := gh.PRs()[0].Body
	if !approvalsNoted(body) || res.Unrequired == "" || gh.AutoMerge(res.Number) != "" || !strings.Contains(log.String(), "require_code_owner_reviews") {
		t.Fatalf("unprotected: %+v, auto-merge %q\n%s\n%s", res, gh.AutoMerge(res.Number), body, log.String())
	}

	gh.Protect("main", 1, true)
	gh.SetCodeOwners(".github/CODEOWNERS", "* @alice @org/platform\n")
	p.Changes = change("a: 2\n")
	if res, err = Propose(ctx, f, openTip(t, dir), p); err != nil {
		t.Fatal(err)
	}
	if body = gh.PRs()[0].Body; res.Unrequired != "" || gh.AutoMerge(res.Number) == "" || !strings.Contains(body, "requires their approval") {
		t.Fatalf("protected: %+v, auto-merge %q\n%s", res, gh.AutoMerge(res.Number), body)
	}
	gh.Approve(res.Number, "alice")
	gh.Merge(res.Number)
	p.Changes = nil
	if res, err = Propose(ctx, f, openTip(t, dir), p); err != nil {
		t.Fatal(err)
	}
	if a := res.Approval; a == nil || a.Number != 1 || strings.Join(a.Approvers, ",") != "alice" || len(a.Commit) != 40 || a.MergedAt == "" {
		t.Fatalf("approval: %+v", res.Approval)
	}
}

// TestProposeApprovalsGitLab: a proposal with approvers on GitLab's
// contract fake, as TestProposeApprovalsGitHub on GitHub's. Without an
// approval rule of the catalog branch naming them, the body and the log
// say so and how (the project's approval rules), and auto-merge is not
// asked for; with the rule, the body says GitLab waits for them, auto-merge
// is asked for (merge_when_pipeline_succeeds and auto_merge, at the head
// seen), and GitLab does not merge on the pipeline's success before the
// named user approved; after the merge, the next proposal reads who
// approved the merged merge request from the approvals API. Every request
// is one of the contract's documented endpoints (the fake fails the test
// on any other).
func TestProposeApprovalsGitLab(t *testing.T) {
	ctx := context.Background()
	dir := newCatalog(t)
	gl := forgetest.NewGitLab(t, "org/catalog")
	f, p, log := approvalProposal(t, gl.Options(), "merge")
	res, err := Propose(ctx, f, openTip(t, dir), p)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	body := gl.PRs()[0].Body
	if !approvalsNoted(body) || !strings.Contains(res.Unrequired, "no protection rule") || gl.AutoMerge(res.Number) != "" || !strings.Contains(log.String(), "POST /projects/:id/approval_rules") ||
		!strings.Contains(body, "Merge request approvals") {
		t.Fatalf("no rule: %+v, auto-merge %q\n%s\n%s", res, gl.AutoMerge(res.Number), body, log.String())
	}
	if merges := requests(gl, http.MethodPut, "/merge"); len(merges) != 0 {
		t.Fatalf("auto-merge asked for without the rule: %v", merges)
	}

	gl.AddApprovalRule("catalog owners", 1, "main", []string{"alice"}, []string{"org/platform"})
	p.Changes = change("a: 2\n")
	if res, err = Propose(ctx, f, openTip(t, dir), p); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if body = gl.PRs()[0].Body; res.Unrequired != "" || gl.AutoMerge(res.Number) != "merge" || !strings.Contains(body, "requires their approval") || !strings.Contains(log.String(), `requires the approval of the approvers of cluster prod (rule \"catalog owners\")`) {
		t.Fatalf("rule: %+v, auto-merge %q\n%s\n%s", res, gl.AutoMerge(res.Number), body, log.String())
	}
	merges := requests(gl, http.MethodPut, "/api/v4/projects/org/catalog/merge_requests/1/merge")
	if len(merges) != 1 {
		t.Fatalf("auto-merge requests: %v", merges)
	}
	var accept map[string]any
	if err := json.Unmarshal([]byte(merges[0].Body), &accept); err != nil || accept["merge_when_pipeline_succeeds"] != true || accept["auto_merge"] != true || accept["sha"] != gl.PRs()[0].HeadSHA {
		t.Fatalf("auto-merge request %s (%v)", merges[0].Body, err)
	}
	if gl.PipelineSucceeded(res.Number) {
		t.Fatal("GitLab merged on the pipeline's success before alice approved")
	}
	gl.Approve(res.Number, "alice")
	if gl.PRs()[0].State != "merged" {
		t.Fatal("not merged after alice's approval")
	}

	p.Changes = nil
	if res, err = Propose(ctx, f, openTip(t, dir), p); err != nil {
		t.Fatal(err)
	}
	if a := res.Approval; a == nil || a.Number != 1 || strings.Join(a.Approvers, ",") != "alice" || len(a.Commit) != 40 || a.MergedAt == "" {
		t.Fatalf("approval: %+v", res.Approval)
	}
	for _, want := range []string{"GET /api/v4/projects/org/catalog/approval_rules", "GET /api/v4/projects/org/catalog/merge_requests/1/approvals"} {
		if len(requests(gl, strings.Fields(want)[0], strings.Fields(want)[1])) == 0 {
			t.Errorf("no %s", want)
		}
	}
	if ls := requests(gl, http.MethodGet, "/api/v4/projects/org/catalog/merge_requests"); !slices.ContainsFunc(ls, func(r forgetest.Request) bool {
		return strings.Contains(r.Query, "state=merged") && strings.Contains(r.Query, "source_branch=publish%2Fprod") && strings.Contains(r.Query, "target_branch=main")
	}) {
		t.Errorf("no list of the merged merge requests from publish/prod into main: %v", ls)
	}
}

// requests are the requests the GitLab fake answered with method whose
// path is path (one starting with "/": ends with it).
func requests(gl *forgetest.GitLab, method, path string) []forgetest.Request {
	var out []forgetest.Request
	for _, r := range gl.Requests() {
		if r.Method == method && (r.Path == path || strings.HasPrefix(path, "/") && !strings.HasPrefix(path, "/api/") && strings.HasSuffix(r.Path, path)) {
			out = append(out, r)
		}
	}
	return out
}

// approvalProposal is the forge of o and a proposal of cluster prod with
// auto-merge method am, two approvers (alice for every artifact, the team
// org/platform for a*) and a line of gate evidence, logging into log.
func approvalProposal(t *testing.T, o forge.Options, am string) (forge.Forge, Proposal, *bytes.Buffer) {
	t.Helper()
	f, err := forge.New(o)
	if err != nil {
		t.Fatal(err)
	}
	log := new(bytes.Buffer)
	plans := 0
	p := proposal(change("a: 1\n"), &plans, log, "")
	p.AutoMerge = am
	p.Approvers = []forge.Approvers{{Users: []string{"alice"}}, {Teams: []string{"org/platform"}, Artifacts: "a*"}}
	p.Evidence = []string{"lab listed a 1.0.0 at 2026-12-04T10:00Z (catalog commit 1a2b3c4d5e6f), soak 1h"}
	return f, p, log
}

// approvalsNoted reports whether a pull request's body of approvalProposal
// names both approvers, says the branch does not require them, and gives
// the gate evidence.
func approvalsNoted(body string) bool {
	for _, want := range []string{"- @alice, for every artifact", "- @org/platform, for artifacts `a*`", "does not require these approvals", "lab listed a 1.0.0 at 2026-12-04T10:00Z"} {
		if !strings.Contains(body, want) {
			return false
		}
	}
	return true
}
