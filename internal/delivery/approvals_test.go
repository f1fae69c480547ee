package delivery

import (
	"bytes"
	"context"
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
	f, err := forge.New(gh.Options())
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	plans := 0
	p := proposal(change("a: 1\n"), &plans, &log, "")
	p.AutoMerge = "squash"
	p.Approvers = []forge.Approvers{{Users: []string{"alice"}}, {Teams: []string{"org/platform"}, Artifacts: "a*"}}
	p.Evidence = []string{"lab listed a 1.0.0 at 2026-12-04T10:00Z (catalog commit 1a2b3c4d5e6f), soak 1h"}
	res, err := Propose(ctx, f, openTip(t, dir), p)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	body := gh.PRs()[0].Body
	if res.Unrequired == "" || gh.AutoMerge(res.Number) != "" || !strings.Contains(log.String(), "require_code_owner_reviews") ||
		!strings.Contains(body, "- @alice, for every artifact") || !strings.Contains(body, "- @org/platform, for artifacts `a*`") ||
		!strings.Contains(body, "does not require these approvals") || !strings.Contains(body, "lab listed a 1.0.0 at 2026-12-04T10:00Z") {
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
