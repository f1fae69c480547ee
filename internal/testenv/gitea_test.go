package testenv

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// TestGitea starts a real Gitea server and walks through what the
// pull-request pipeline does against it: a first commit pushed over Git
// smart HTTP into an empty repository, a branch and a pull request made
// through the API, a merge as a reviewer would, and a read-only token that
// can neither open a pull request nor push.
func TestGitea(t *testing.T) {
	g := Gitea(t)
	if !strings.HasPrefix(g.URL, "http://127.0.0.1:") {
		t.Fatalf("URL = %q, want http://127.0.0.1:PORT", g.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var me struct {
		Login   string `json:"login"`
		IsAdmin bool   `json:"is_admin"`
	}
	if _, err := g.Do(ctx, http.MethodGet, "/user", nil, &me); err != nil {
		t.Fatal(err)
	}
	if me.Login != g.User || !me.IsAdmin {
		t.Fatalf("GET /user = %+v, want admin %s", me, g.User)
	}

	clone := g.CreateRepoWith(t, RepoOptions{Name: "catalog", DefaultBranch: "main"})
	if want := g.URL + "/" + g.User + "/catalog.git"; clone != want {
		t.Fatalf("clone URL = %q, want %q", clone, want)
	}

	// The first commit, pushed into the empty repository with go-git.
	auth := &githttp.BasicAuth{Username: g.User, Password: g.Token}
	repo, err := git.Init(memory.NewStorage(), memfs.New())
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.NewBranchReferenceName("main"))); err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	f, err := wt.Filesystem.Create("README.md")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("# catalog\n"))
	f.Close()
	if _, err := wt.Add("README.md"); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "Test", Email: "test@example.com", When: time.Unix(1700000000, 0)}
	first, err := wt.Commit("first commit", &git.CommitOptions{Author: sig})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{clone}}); err != nil {
		t.Fatal(err)
	}
	if err := repo.PushContext(ctx, &git.PushOptions{Auth: auth, RefSpecs: []gitconfig.RefSpec{"refs/heads/main:refs/heads/main"}}); err != nil {
		t.Fatalf("push the first commit: %v", err)
	}
	g.WaitBranch(t, "catalog", "main", first.String())
	var branch struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}

	// The git command with the credentials in the URL.
	if git, err := exec.LookPath("git"); err == nil {
		cmd := exec.CommandContext(ctx, git, "ls-remote", g.AuthURL(clone), "refs/heads/main")
		cmd.Env = append(os.Environ(), append(hermeticGitEnv, "GIT_TERMINAL_PROMPT=0")...)
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(out), first.String()+"\t") {
			t.Fatalf("git ls-remote with AuthURL: %v, %q; want %s refs/heads/main", err, out, first)
		}
	}

	// A branch and a change on it through the API, then a pull request.
	base := "/repos/" + g.User + "/catalog"
	if _, err := g.Do(ctx, http.MethodPost, base+"/branches", map[string]any{"new_branch_name": "publish/prod", "old_branch_name": "main"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Do(ctx, http.MethodPost, base+"/contents/rendered/prod.yaml", map[string]any{
		"branch": "publish/prod", "message": "render prod",
		"content": base64.StdEncoding.EncodeToString([]byte("kind: Artifact\n")),
	}, nil); err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Number int    `json:"number"`
		State  string `json:"state"`
	}
	if _, err := g.Do(ctx, http.MethodPost, base+"/pulls", map[string]any{
		"head": "publish/prod", "base": "main", "title": "publish: prod", "body": "the plan",
	}, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.Number == 0 || pr.State != "open" {
		t.Fatalf("created pull request = %+v, want an open one with a number", pr)
	}
	merged := g.Merge(t, "catalog", pr.Number)
	if _, err := g.Do(ctx, http.MethodGet, base+"/branches/main", nil, &branch); err != nil {
		t.Fatal(err)
	}
	if merged == "" || branch.Commit.ID != merged {
		t.Fatalf("main after the merge = %s, want the merge commit %q", branch.Commit.ID, merged)
	}
	if _, err := g.Do(ctx, http.MethodGet, base+"/contents/rendered/prod.yaml?ref=main", nil, nil); err != nil {
		t.Fatalf("the merged file is not on main: %v", err)
	}

	// A token without rights: read access only.
	reader, ro := g.ReadOnlyUser(t, "catalog")
	if _, err := g.DoToken(ctx, ro, http.MethodGet, base, nil, nil); err != nil {
		t.Fatalf("the read-only token cannot read the repository: %v", err)
	}
	if _, err := g.Do(ctx, http.MethodPost, base+"/branches", map[string]any{"new_branch_name": "publish/dev", "old_branch_name": "main"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Do(ctx, http.MethodPost, base+"/contents/rendered/dev.yaml", map[string]any{
		"branch": "publish/dev", "message": "render dev",
		"content": base64.StdEncoding.EncodeToString([]byte("kind: Artifact\n")),
	}, nil); err != nil {
		t.Fatal(err)
	}
	status, err := g.DoToken(ctx, ro, http.MethodPost, base+"/pulls", map[string]any{
		"head": "publish/dev", "base": "main", "title": "publish: dev",
	}, nil)
	var ae *APIError
	if status != http.StatusForbidden || !errors.As(err, &ae) {
		t.Fatalf("pull request with the read-only token: status %d, %v; want 403", status, err)
	}
	t.Logf("read-only token, POST %s/pulls: %v", base, err)
	// Nor can it push.
	f, err = wt.Filesystem.Create("other.txt")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("x\n"))
	f.Close()
	if _, err := wt.Add("other.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit("not allowed", &git.CommitOptions{Author: sig}); err != nil {
		t.Fatal(err)
	}
	err = repo.PushContext(ctx, &git.PushOptions{
		Auth:     &githttp.BasicAuth{Username: reader, Password: ro},
		RefSpecs: []gitconfig.RefSpec{"refs/heads/main:refs/heads/denied"},
	})
	if !errors.Is(err, transport.ErrAuthorizationFailed) && !errors.Is(err, transport.ErrAuthenticationRequired) {
		t.Fatalf("push with the read-only token: %v, want it refused", err)
	}
	if status, _ := g.Do(ctx, http.MethodGet, base+"/branches/denied", nil, nil); status != http.StatusNotFound {
		t.Fatalf("GET branches/denied after the refused push: status %d, want 404", status)
	}
}
