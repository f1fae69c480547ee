package forge_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestGitea runs the Gitea client against a real Gitea server
// (testenv.Gitea: the binary of hack/gitea/build.sh in $PUBLISH_GITEA),
// one server for the subtests.
func TestGitea(t *testing.T) {
	g := testenv.Gitea(t)
	t.Run("lifecycle", func(t *testing.T) { giteaLifecycle(t, g) })
	t.Run("read-only", func(t *testing.T) { giteaReadOnly(t, g) })
	t.Run("body-limit", func(t *testing.T) { giteaBodyLimit(t, g) })
}

type giteaRepo struct {
	url, token, repo string
	sdk              *gitea.Client
}

// newGiteaRepo creates a public repository with a main branch and a branch
// publish/c1 one commit ahead (a PR needs a difference), deleted when the
// test ends.
func newGiteaRepo(t *testing.T, g *testenv.GiteaServer) *giteaRepo {
	t.Helper()
	root, token := g.URL, g.Token
	c, err := gitea.NewClient(root, gitea.SetToken(token))
	if err != nil {
		t.Fatalf("gitea client for %s: %v", root, err)
	}
	me, _, err := c.GetMyUserInfo()
	if err != nil {
		t.Fatalf("gitea: who am I: %v", err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "forge-" + hex.EncodeToString(b)
	if _, _, err := c.CreateRepo(gitea.CreateRepoOption{Name: name, AutoInit: true, DefaultBranch: "main", Readme: "Default"}); err != nil {
		t.Fatalf("gitea: create repo %s: %v", name, err)
	}
	t.Cleanup(func() { _, _ = c.DeleteRepo(me.UserName, name) })
	r := &giteaRepo{url: root + "/api/v1", token: token, repo: me.UserName + "/" + name, sdk: c}
	r.commit(t, "publish/c1", "rendered/c1/a.yaml", "a: 1\n")
	return r
}

// commit adds file to branch, creating the branch from main when missing.
func (r *giteaRepo) commit(t *testing.T, branch, path, content string) {
	t.Helper()
	owner, name, _ := strings.Cut(r.repo, "/")
	fo := gitea.FileOptions{Message: "add " + path, BranchName: branch}
	if _, _, err := r.sdk.GetRepoBranch(owner, name, branch); err != nil {
		fo = gitea.FileOptions{Message: "add " + path, BranchName: "main", NewBranchName: branch}
	}
	if _, _, err := r.sdk.CreateFile(owner, name, path, gitea.CreateFileOptions{FileOptions: fo, Content: base64.StdEncoding.EncodeToString([]byte(content))}); err != nil {
		t.Fatalf("gitea: commit %s on %s: %v", path, branch, err)
	}
}

func (r *giteaRepo) forge(t *testing.T, token string) forge.Forge {
	t.Helper()
	f, err := forge.New(forge.Options{Kind: "gitea", APIURL: r.url, Repo: r.repo, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func giteaLifecycle(t *testing.T, g *testenv.GiteaServer) {
	r := newGiteaRepo(t, g)
	ctx := context.Background()
	f := r.forge(t, r.token)
	if err := f.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if got, err := f.Find(ctx, "publish/c1", "main"); err != nil || got != nil {
		t.Fatalf("Find before any PR = %+v, %v", got, err)
	}
	first, err := f.Create(ctx, "publish/c1", "main", forge.Change{Title: "publish c1", Body: "plan v1", Labels: []string{"publish"}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if first.Number == 0 || first.State != "open" || first.Head != "publish/c1" || first.Base != "main" || first.URL == "" || first.HeadSHA == "" || !slices.Equal(first.Labels, []string{"publish"}) {
		t.Errorf("Create = %+v", first)
	}
	found, err := f.Find(ctx, "publish/c1", "main")
	if err != nil || found == nil || found.Number != first.Number {
		t.Fatalf("Find = %+v, %v", found, err)
	}
	upd, err := f.Update(ctx, first.Number, forge.Change{Title: "publish c1: 2", Body: "plan v2", Labels: []string{"cluster:c1"}})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	slices.Sort(upd.Labels)
	if upd.Title != "publish c1: 2" || upd.Body != "plan v2" || !slices.Equal(upd.Labels, []string{"cluster:c1", "publish"}) {
		t.Errorf("Update = %+v", upd)
	}
	again, err := f.Create(ctx, "publish/c1", "main", forge.Change{Title: "publish c1: 3", Body: "plan v3"})
	if err != nil || again.Number != first.Number || again.Body != "plan v3" {
		t.Fatalf("Create when one is open = %+v, %v", again, err)
	}
	if err := f.Comment(ctx, first.Number, "re-rendered"); err != nil {
		t.Fatalf("Comment: %v", err)
	}
	if err := f.Close(ctx, first.Number, "no change left for c1"); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got, err := f.Find(ctx, "publish/c1", "main"); err != nil || got != nil {
		t.Errorf("Find after Close = %+v, %v", got, err)
	}

	// Auto-merge of a second PR: Gitea schedules it (201) and its queue
	// merges it a moment later, there being no status checks; the test
	// does not wait for that (no sleeps), it logs what it sees.
	r.commit(t, "publish/c2", "rendered/c2/a.yaml", "a: 2\n")
	second, err := f.Create(ctx, "publish/c2", "main", forge.Change{Title: "publish c2", Body: "plan"})
	if err != nil {
		t.Fatalf("Create c2: %v", err)
	}
	if err := f.AutoMerge(ctx, second, "merge"); err != nil {
		t.Fatalf("AutoMerge: %v", err)
	}
	owner, name, _ := strings.Cut(r.repo, "/")
	if p, _, err := r.sdk.GetPullRequest(owner, name, int64(second.Number)); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("after AutoMerge: merged %v, state %s", p.HasMerged, p.State)
	}
	if err := f.AutoMerge(ctx, second, "bogus"); err == nil {
		t.Error("AutoMerge with method bogus passed")
	}
}

func giteaReadOnly(t *testing.T, g *testenv.GiteaServer) {
	r := newGiteaRepo(t, g)
	ro := g.ReadOnlyToken(t, r.repo)
	ctx := context.Background()
	f := r.forge(t, ro)
	for what, err := range map[string]error{
		"Check": f.Check(ctx),
		"Create": func() error {
			_, err := f.Create(ctx, "publish/c1", "main", forge.Change{Title: "t", Body: "b"})
			return err
		}(),
	} {
		var pe *forge.PermissionError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "write:repository") || !strings.Contains(err.Error(), "--forge-token") || strings.Contains(err.Error(), ro) {
			t.Errorf("%s with a read-only token = %v, want a *PermissionError naming write:repository", what, err)
		}
		t.Logf("%s: %v", what, err)
	}
}

func giteaBodyLimit(t *testing.T, g *testenv.GiteaServer) {
	r := newGiteaRepo(t, g)
	f := r.forge(t, r.token)
	_, err := f.Create(context.Background(), "publish/c1", "main", forge.Change{Title: "t", Body: strings.Repeat("x", f.MaxBody()+1)})
	if err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("Create over MaxBody = %v", err)
	}
}
