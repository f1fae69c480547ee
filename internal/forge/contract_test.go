package forge_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/forge/forgetest"
)

// fake is what the GitHub and GitLab fakes have in common.
type fake interface {
	URL() string
	Token() string
	Repo() string
	PRs() []forge.PullRequest
	Comments(number int) []string
	AutoMerge(number int) string
	Merge(number int)
	Requests() []forgetest.Request
	Options() forge.Options
}

func newGitHub(t *testing.T, f *forgetest.GitHub) forge.Forge {
	t.Helper()
	return open(t, "github", f)
}

func open(t *testing.T, kind string, f fake) forge.Forge {
	t.Helper()
	o := f.Options()
	if o.Kind != kind {
		t.Fatalf("the fake's kind is %s, want %s", o.Kind, kind)
	}
	fg, err := forge.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return fg
}

// pr returns the fake's PR number n.
func pr(t *testing.T, f fake, n int) forge.PullRequest {
	t.Helper()
	for _, p := range f.PRs() {
		if p.Number == n {
			return p
		}
	}
	t.Fatalf("the fake has no PR #%d", n)
	return forge.PullRequest{}
}

// testLifecycle is the story of a cluster's rolling PR: the first run opens
// it, a second finds it and updates it (labels added), a run whose Create
// races an existing PR updates that one, a comment, auto-merge, and a run
// with nothing left to change closes it with a note; after a person merges
// a later PR, Find no longer returns it.
func testLifecycle(t *testing.T, kind string, f fake, wantAutoMerge string) {
	ctx := context.Background()
	fg := open(t, kind, f)
	if err := fg.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}

	got, err := fg.Find(ctx, "publish/c1", "main")
	if err != nil || got != nil {
		t.Fatalf("Find before any PR = %v, %v; want nil, nil", got, err)
	}

	first, err := fg.Create(ctx, "publish/c1", "main", forge.Change{Title: "publish c1: 2 changes", Body: "plan v1", Labels: []string{"publish"}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if first.Number == 0 || first.State != "open" || first.Head != "publish/c1" || first.Base != "main" || first.URL == "" || first.HeadSHA == "" {
		t.Errorf("Create = %+v", first)
	}
	if !slices.Equal(first.Labels, []string{"publish"}) {
		t.Errorf("Create labels = %v, want [publish]", first.Labels)
	}

	found, err := fg.Find(ctx, "publish/c1", "main")
	if err != nil || found == nil || found.Number != first.Number || found.Body != "plan v1" {
		t.Fatalf("Find = %+v, %v; want #%d", found, err, first.Number)
	}
	if other, err := fg.Find(ctx, "publish/c1", "release"); err != nil || other != nil {
		t.Errorf("Find into another base = %+v, %v; want nil", other, err)
	}

	upd, err := fg.Update(ctx, first.Number, forge.Change{Title: "publish c1: 3 changes", Body: "plan v2", Labels: []string{"cluster:c1"}})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if upd.Title != "publish c1: 3 changes" || upd.Body != "plan v2" || !slices.Equal(upd.Labels, []string{"publish", "cluster:c1"}) {
		t.Errorf("Update = %+v; want the new title and body and labels [publish cluster:c1]", upd)
	}

	again, err := fg.Create(ctx, "publish/c1", "main", forge.Change{Title: "publish c1: 4 changes", Body: "plan v3", Labels: []string{"publish"}})
	if err != nil {
		t.Fatalf("Create when one is open: %v", err)
	}
	if again.Number != first.Number || again.Body != "plan v3" {
		t.Errorf("Create when one is open = %+v, want #%d updated", again, first.Number)
	}
	if n := len(f.PRs()); n != 1 {
		t.Errorf("the fake has %d PRs, want 1", n)
	}

	if err := fg.Comment(ctx, first.Number, "the branch was re-rendered over a change by someone else"); err != nil {
		t.Fatalf("Comment: %v", err)
	}
	if err := fg.AutoMerge(ctx, again, "squash"); err != nil {
		t.Fatalf("AutoMerge: %v", err)
	}
	if m := f.AutoMerge(first.Number); m != wantAutoMerge {
		t.Errorf("auto-merge method = %q, want %q", m, wantAutoMerge)
	}

	if err := fg.Close(ctx, first.Number, "the source no longer changes cluster c1"); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if p := pr(t, f, first.Number); p.State != "closed" {
		t.Errorf("state after Close = %q", p.State)
	}
	if c := f.Comments(first.Number); !slices.Equal(c, []string{"the branch was re-rendered over a change by someone else", "the source no longer changes cluster c1"}) {
		t.Errorf("comments = %q", c)
	}
	if got, err := fg.Find(ctx, "publish/c1", "main"); err != nil || got != nil {
		t.Errorf("Find after Close = %+v, %v; want nil", got, err)
	}

	// A new PR after the closed one, merged by a person: gone from Find.
	second, err := fg.Create(ctx, "publish/c1", "main", forge.Change{Title: "publish c1", Body: "plan v4"})
	if err != nil {
		t.Fatalf("Create after Close: %v", err)
	}
	if second.Number == first.Number {
		t.Errorf("Create after Close reused #%d", first.Number)
	}
	f.Merge(second.Number)
	if got, err := fg.Find(ctx, "publish/c1", "main"); err != nil || got != nil {
		t.Errorf("Find after Merge = %+v, %v; want nil", got, err)
	}
	if p := pr(t, f, second.Number); p.State != "merged" {
		t.Errorf("state after Merge = %q", p.State)
	}

	for _, r := range f.Requests() {
		if strings.Contains(r.Path+r.Query+r.Body, f.Token()) {
			t.Errorf("the token is in request %s", r)
		}
	}
}

// testReadOnly: a token that may only read gets a *PermissionError that
// names the permission and the flag, never the token.
func testReadOnly(t *testing.T, kind string, f fake, need string) {
	ctx := context.Background()
	fg := open(t, kind, f)
	check := func(what string, err error) {
		t.Helper()
		var pe *forge.PermissionError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: %v, want a *PermissionError", what, err)
		}
		msg := err.Error()
		for _, w := range []string{need, "--forge-token", f.Repo()} {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q does not say %q", what, msg, w)
			}
		}
		if strings.Contains(msg, f.Token()) {
			t.Errorf("%s: %q shows the token", what, msg)
		}
	}
	check("Check", fg.Check(ctx))
	_, err := fg.Create(ctx, "publish/c1", "main", forge.Change{Title: "t", Body: "b"})
	check("Create", err)
	if n := len(f.PRs()); n != 0 {
		t.Errorf("a read-only token opened %d PRs", n)
	}
}

func testBadToken(t *testing.T, kind string, f fake) {
	fg, err := forge.New(forge.Options{Kind: kind, APIURL: f.URL(), Repo: f.Repo(), Token: "wrong-token-value"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = fg.Find(context.Background(), "publish/c1", "main")
	var pe *forge.PermissionError
	if !errors.As(err, &pe) || pe.Status != 401 || !strings.Contains(err.Error(), "--forge-token") || strings.Contains(err.Error(), "wrong-token-value") {
		t.Errorf("Find with a wrong token = %v", err)
	}
}

func testBodyLimit(t *testing.T, kind string, f fake) {
	fg := open(t, kind, f)
	body := strings.Repeat("x", fg.MaxBody()+1)
	_, err := fg.Create(context.Background(), "publish/c1", "main", forge.Change{Title: "t", Body: body})
	if err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("Create with a body of MaxBody+1 = %v, want an error about the limit", err)
	}
	if n := len(f.PRs()); n != 0 {
		t.Errorf("%d PRs opened with a body over the limit", n)
	}
	if _, err := fg.Create(context.Background(), "publish/c1", "main", forge.Change{Title: "t", Body: body[1:]}); err != nil {
		t.Errorf("Create with a body of MaxBody: %v", err)
	}
}

// testMissing: a write on a PR that does not exist (or that the token
// cannot see: the forges answer 404 for both) is a *PermissionError whose
// text says both.
func testMissing(t *testing.T, kind string, f fake) {
	fg := open(t, kind, f)
	_, err := fg.Update(context.Background(), 99, forge.Change{Title: "t"})
	var pe *forge.PermissionError
	if !errors.As(err, &pe) || pe.Status != 404 || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "cannot see it") {
		t.Errorf("Update(99) = %v, want a 404 *PermissionError", err)
	}
}
