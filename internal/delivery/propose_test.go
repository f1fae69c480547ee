package delivery

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/forge/forgetest"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/report"
)

// clock is the fixed time of the tests' commits.
var clock = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// newCatalog is a bare catalog repo whose main holds main.yaml.
func newCatalog(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := git.PlainInit(dir, true); err != nil {
		t.Fatal(err)
	}
	tip := openTip(t, dir)
	w, err := tip.Commit([]catalog.Change{{Path: "main.yaml", Data: []byte("main: 1\n")}}, catalog.CommitOptionsFor(gitops.Options{}, "seed", clock))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tip.Push(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openTip opens the tip of main of the catalog repo at dir, closed when
// the test ends.
func openTip(t *testing.T, dir string) *catalog.Tip {
	t.Helper()
	tip, err := catalog.OpenTip(context.Background(), gitops.Options{URL: dir, Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tip.Close() })
	return tip
}

// headOf is the commit of branch in the bare repo at dir ("" when none).
func headOf(t *testing.T, dir, branch string) string {
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

// pushOver pushes a commit of someone else on branch of the repo at dir.
func pushOver(t *testing.T, dir, branch string) string {
	t.Helper()
	work := t.TempDir()
	repo, err := git.PlainClone(work, false, &git.CloneOptions{URL: dir, ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "hand.yaml"), []byte("hand: edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add("hand.yaml"); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit("hand edit", &git.CommitOptions{Author: &object.Signature{Name: "someone", Email: "someone@example.com", When: clock}})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// proposal is a proposal of changes for cluster prod from publish/prod
// into main, with a plan whose calls *plans counts and a log into log.
func proposal(changes []catalog.Change, plans *int, log *bytes.Buffer, planDir string) Proposal {
	return Proposal{
		Cluster: "prod", Branch: "publish/prod", Base: "main",
		Changes: changes,
		Message: func() (string, error) { return "publish: prod", nil },
		Commit:  catalog.CommitOptionsFor(gitops.Options{}, "", time.Time{}),
		Now:     func() time.Time { return clock },
		Plan: func() *report.Plan {
			*plans++
			p := &report.Plan{SchemaVersion: report.PlanSchemaVersion, Cluster: "prod", Artifacts: []report.PlanArtifact{{Name: "a", Action: "listed", Versions: []report.PlanVersion{{Version: "1.0.0", Action: "added"}}}}, Findings: []lint.Finding{}}
			p.Summarise(nil)
			return p
		},
		Subject: "list a 1.0.0",
		Labels:  []string{"publish"},
		Source:  strings.Repeat("5", 40),
		PlanDir: planDir,
		JobURL:  "https://ci.example.com/jobs/1",
		Log:     slog.New(slog.NewTextHandler(log, nil)),
	}
}

func change(content string) []catalog.Change {
	return []catalog.Change{{Path: "rendered/prod/a.yaml", Data: []byte(content)}}
}

// TestProposeGitHub: Propose on a real catalog repo and GitHub's contract
// fake, run after run: a change opens the pull request (the rolling
// branch one commit on main, the plan in the body with the marker, the
// plan files written, auto-merge asked for); the same change again is
// "unchanged" without a push or a plan; another change updates it; a
// commit someone else pushed is rendered over with a note; changes main
// already has close it and delete the branch; then nothing is proposed.
func TestProposeGitHub(t *testing.T) {
	ctx := context.Background()
	dir := newCatalog(t)
	main := headOf(t, dir, "main")
	gh := forgetest.NewGitHub(t, "org/catalog")
	f, err := forge.New(gh.Options())
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	plans := 0
	planDir := t.TempDir()
	propose := func(what string, p Proposal) *Result {
		t.Helper()
		log.Reset()
		res, err := Propose(ctx, f, openTip(t, dir), p)
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, log.String())
		}
		if res.Branch != "publish/prod" || headOf(t, dir, "main") != main {
			t.Fatalf("%s: branch %q, main moved", what, res.Branch)
		}
		return res
	}

	// 1. Opened.
	p := proposal(change("a: 1\n"), &plans, &log, planDir)
	p.AutoMerge = "squash"
	res := propose("open", p)
	head := headOf(t, dir, "publish/prod")
	if res.Action != "opened" || res.Number == 0 || res.Commit != head || res.Replaced != "" || res.PlanFile != filepath.Join(planDir, "prod.md") || plans != 1 {
		t.Fatalf("open: %+v (branch at %s, %d plans)", res, head, plans)
	}
	prs := gh.PRs()
	if len(prs) != 1 || prs[0].Head != "publish/prod" || prs[0].Base != "main" || prs[0].Title != "list a 1.0.0 on cluster prod" || strings.Join(prs[0].Labels, ",") != "publish" {
		t.Fatalf("pull requests: %+v", prs)
	}
	want := Marker{Cluster: "prod", Head: head, Base: main, Source: p.Source}
	if m := ParseMarker(prs[0].Body); m.Tree == "" || (Marker{Cluster: m.Cluster, Head: m.Head, Base: m.Base, Source: m.Source}) != want || !strings.Contains(prs[0].Body, "https://ci.example.com/jobs/1") {
		t.Fatalf("body's marker %+v, want %+v:\n%s", m, want, prs[0].Body)
	}
	if _, err := os.Stat(filepath.Join(planDir, "prod.json")); err != nil {
		t.Error(err)
	}
	if gh.AutoMerge(res.Number) != "squash" {
		t.Error("auto-merge was not asked for")
	}
	for _, line := range []string{"pull request: pushed " + head[:12] + " to publish/prod", "pull request: opened #1 (" + prs[0].URL + ")"} {
		if !strings.Contains(log.String(), line) {
			t.Errorf("log lacks %q:\n%s", line, log.String())
		}
	}
	number := res.Number

	// 2. The same change: unchanged, nothing pushed, no plan made.
	res = propose("again", proposal(change("a: 1\n"), &plans, &log, planDir))
	if res.Action != "unchanged" || res.Number != number || res.Commit != head || plans != 1 || headOf(t, dir, "publish/prod") != head {
		t.Fatalf("again: %+v, %d plans", res, plans)
	}
	if !strings.Contains(log.String(), "pull request: #1 ("+prs[0].URL+") already proposes this change of cluster prod") {
		t.Errorf("log:\n%s", log.String())
	}

	// 3. Another change: the same pull request, updated.
	res = propose("update", proposal(change("a: 2\n"), &plans, &log, ""))
	head = headOf(t, dir, "publish/prod")
	if res.Action != "updated" || res.Number != number || res.Commit != head || res.PlanFile != "" || plans != 2 {
		t.Fatalf("update: %+v", res)
	}
	if ParseMarker(gh.PRs()[0].Body).Head != head {
		t.Error("the updated body's marker is not the new head")
	}

	// 4. Someone pushes to the branch: rendered over, with a note.
	theirs := pushOver(t, dir, "publish/prod")
	res = propose("over", proposal(change("a: 3\n"), &plans, &log, ""))
	if res.Action != "updated" || res.Replaced != theirs || headOf(t, dir, "publish/prod") != res.Commit {
		t.Fatalf("over someone's commit: %+v", res)
	}
	if cs := gh.Comments(number); len(cs) != 1 || !strings.Contains(cs[0], theirs) || !strings.Contains(cs[0], "555555555555") {
		t.Errorf("comments: %q", cs)
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "had commit "+theirs[:12]+" by someone else") {
		t.Errorf("log:\n%s", log.String())
	}

	// 5. Changes main already has: closed, the branch deleted.
	res = propose("close", proposal([]catalog.Change{{Path: "main.yaml", Data: []byte("main: 1\n")}}, &plans, &log, ""))
	if res.Action != "closed" || res.Number != number || res.Commit != "" || headOf(t, dir, "publish/prod") != "" {
		t.Fatalf("close: %+v", res)
	}
	if pr := gh.PRs()[0]; pr.State != "closed" {
		t.Fatalf("pull request: %+v", pr)
	}

	// 6. Nothing to propose and nothing open.
	res = propose("nothing", proposal(nil, &plans, &log, ""))
	if *res != (Result{Branch: "publish/prod"}) || len(gh.PRs()) != 1 || !strings.Contains(log.String(), "pull request: nothing to propose for cluster prod, none open") {
		t.Fatalf("nothing: %+v\n%s", res, log.String())
	}
}

// TestProposeWarnsAndFails: a forge that does not allow auto-merge gets a
// warning and the pull request is still opened; the message's error and
// the forge's are returned as they are, with the Result of what was done.
func TestProposeWarnsAndFails(t *testing.T) {
	ctx := context.Background()
	dir := newCatalog(t)
	var log bytes.Buffer
	plans := 0

	gh := forgetest.NewGitHub(t, "org/catalog", forgetest.NoAutoMerge())
	f, err := forge.New(gh.Options())
	if err != nil {
		t.Fatal(err)
	}
	p := proposal(change("a: 1\n"), &plans, &log, "")
	p.AutoMerge = "merge"
	res, err := Propose(ctx, f, openTip(t, dir), p)
	if err != nil || res.Action != "opened" || !strings.Contains(log.String(), "pull request: auto-merge (merge) is not available for #1") {
		t.Fatalf("no auto-merge: %+v, %v\n%s", res, err, log.String())
	}

	bad := errors.New("the template failed")
	p = proposal(change("a: 2\n"), &plans, &log, "")
	p.Message = func() (string, error) { return "", bad }
	res, err = Propose(ctx, f, openTip(t, dir), p)
	if err != bad || *res != (Result{Branch: "publish/prod"}) {
		t.Fatalf("message error: %+v, %v", res, err)
	}

	ro := forgetest.NewGitHub(t, "org/catalog", forgetest.ReadOnly())
	f, err = forge.New(ro.Options())
	if err != nil {
		t.Fatal(err)
	}
	p = proposal(change("a: 3\n"), &plans, &log, "")
	res, err = Propose(ctx, f, openTip(t, dir), p)
	var perm *forge.PermissionError
	if !errors.As(err, &perm) || res.Action != "" || res.Commit == "" || res.Commit != headOf(t, dir, "publish/prod") {
		t.Fatalf("read-only token: %+v, %v", res, err)
	}
}
