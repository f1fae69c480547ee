package forge_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/forge/forgetest"
)

func TestProtectionMissing(t *testing.T) {
	want := []forge.Approvers{{Users: []string{"alice"}, Teams: []string{"acme/platform"}}}
	if m := (&forge.Protection{}).Missing(want); len(m) != 1 || !strings.Contains(m[0], "no protection rule") {
		t.Errorf("unprotected: %q", m)
	}
	p := &forge.Protection{Protected: true, Rule: "main", RequiredApprovals: 1, Users: []string{"Alice"}, Teams: []string{"platform"}}
	if m := p.Missing(want); len(m) != 0 {
		t.Errorf("protected: %q", m)
	}
	p.RequiredApprovals, p.Users = 0, nil
	if m := p.Missing(want); len(m) != 2 || !strings.Contains(m[0], "requires 0 approvals") || !strings.Contains(m[1], "user alice") {
		t.Errorf("no approvals, no alice: %q", m)
	}
	a := forge.Approvers{Users: []string{"bob"}, Artifacts: "cert-*"}
	if !a.Applies([]string{"tiny", "cert-manager"}) || a.Applies([]string{"tiny"}) || !(forge.Approvers{}).Applies(nil) {
		t.Error("Applies")
	}
}

// TestGitHubReviews: the branch protection and CODEOWNERS, the reviews
// and the last merged pull request, through the documented endpoints of
// the GitHub fake (it fails the test on any other request).
func TestGitHubReviews(t *testing.T) {
	ctx := context.Background()
	gh := forgetest.NewGitHub(t, "acme/catalog")
	rv := newGitHub(t, gh).(forge.Reviews)
	want := []forge.Approvers{{Users: []string{"alice"}, Teams: []string{"acme/platform"}}}
	p, err := rv.Protection(ctx, "main")
	if err != nil || p.Protected {
		t.Fatalf("unprotected: %+v, %v", p, err)
	}
	gh.Protect("main", 1, true)
	gh.SetCodeOwners(".github/CODEOWNERS", "# owners\n* @alice @acme/platform\n/docs/ @carol\n")
	if p, err = rv.Protection(ctx, "main"); err != nil || p.RequiredApprovals != 1 || len(p.Missing(want)) != 0 || !slices.Contains(p.Users, "carol") {
		t.Fatalf("protected: %+v, %v", p, err)
	}
	gh.Protect("main", 1, false)
	if p, _ = rv.Protection(ctx, "main"); len(p.Missing(want)) != 2 {
		t.Errorf("without code owner reviews anyone counts: %q", p.Missing(want))
	}

	f := newGitHub(t, gh)
	gh.SetHead("publish/prod", strings.Repeat("a", 40))
	pr, err := f.Create(ctx, "publish/prod", "main", forge.Change{Title: "t", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := rv.LastMerged(ctx, "publish/prod", "main"); m != nil || err != nil {
		t.Fatalf("nothing merged yet: %+v, %v", m, err)
	}
	gh.Approve(pr.Number, "alice")
	gh.Merge(pr.Number)
	m, err := rv.LastMerged(ctx, "publish/prod", "main")
	if err != nil || m == nil || m.Number != pr.Number || len(m.Commit) != 40 || m.MergedAt.IsZero() {
		t.Fatalf("merged: %+v, %v", m, err)
	}
	as, err := rv.Approvals(ctx, pr.Number)
	if err != nil || len(as) != 1 || as[0].User != "alice" || as[0].Commit != strings.Repeat("a", 40) {
		t.Fatalf("approvals: %+v, %v", as, err)
	}
	var paths []string
	for _, r := range gh.Requests() {
		if r.Method == http.MethodGet {
			paths = append(paths, r.Path)
		}
	}
	for _, p := range []string{"/api/v3/repos/acme/catalog/branches/main/protection", "/api/v3/repos/acme/catalog/contents/.github/CODEOWNERS", "/api/v3/repos/acme/catalog/pulls/1/reviews"} {
		if !slices.Contains(paths, p) {
			t.Errorf("no GET %s in %q", p, paths)
		}
	}
}

// TestGitLabReviews: the approval rules, the approvals and the last
// merged merge request, through the documented endpoints of the GitLab
// fake (it fails the test on any other request).
func TestGitLabReviews(t *testing.T) {
	ctx := context.Background()
	gl := forgetest.NewGitLab(t, "acme/catalog")
	f := open(t, "gitlab", gl)
	rv := f.(forge.Reviews)
	want := []forge.Approvers{{Users: []string{"alice"}, Teams: []string{"acme/platform"}}}
	p, err := rv.Protection(ctx, "main")
	if err != nil || p.Protected || len(p.Missing(want)) != 1 {
		t.Fatalf("no rule: %+v, %v", p, err)
	}
	gl.AddApprovalRule("catalog", 1, "other", []string{"alice"}, nil)
	if p, _ = rv.Protection(ctx, "main"); p.Protected {
		t.Errorf("a rule of another branch applies: %+v", p)
	}
	gl.AddApprovalRule("catalog owners", 1, "main", []string{"alice"}, []string{"acme/platform"})
	if p, err = rv.Protection(ctx, "main"); err != nil || p.Rule != "catalog owners" || len(p.Missing(want)) != 0 {
		t.Fatalf("rule: %+v, %v", p, err)
	}
	gl.SetHead("publish/prod", strings.Repeat("b", 40))
	pr, err := f.Create(ctx, "publish/prod", "main", forge.Change{Title: "t", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := rv.LastMerged(ctx, "publish/prod", "main"); m != nil || err != nil {
		t.Fatalf("nothing merged yet: %+v, %v", m, err)
	}
	gl.Approve(pr.Number, "alice")
	gl.Merge(pr.Number)
	m, err := rv.LastMerged(ctx, "publish/prod", "main")
	if err != nil || m == nil || m.Number != pr.Number || len(m.Commit) != 40 || m.MergedAt.IsZero() {
		t.Fatalf("merged: %+v, %v", m, err)
	}
	as, err := rv.Approvals(ctx, pr.Number)
	if err != nil || len(as) != 1 || as[0].User != "alice" {
		t.Fatalf("approvals: %+v, %v", as, err)
	}
	var got []string
	for _, r := range gl.Requests() {
		got = append(got, r.String())
	}
	for _, want := range []string{"GET /api/v4/projects/acme/catalog/approval_rules", "GET /api/v4/projects/acme/catalog/merge_requests/1/approvals"} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("no %s in %q", want, got)
		}
	}
}
