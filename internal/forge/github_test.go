package forge_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/forge/forgetest"
)

func TestGitHubLifecycle(t *testing.T) {
	gh := forgetest.NewGitHub(t, "acme/catalog")
	testLifecycle(t, "github", gh, "squash")
	// The auto-merge went through GraphQL at GHES's /api/graphql.
	n := 0
	for _, r := range gh.Requests() {
		if r.Method == http.MethodPost && r.Path == "/api/graphql" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d GraphQL requests, want 1", n)
	}
}

func TestGitHubReadOnly(t *testing.T) {
	testReadOnly(t, "github", forgetest.NewGitHub(t, "acme/catalog", forgetest.ReadOnly()), "Pull requests: write")
}

func TestGitHubReadOnlyWriteNamesAcceptedPermissions(t *testing.T) {
	// Check cannot see a GitHub App token's rights; the write can.
	gh := forgetest.NewGitHub(t, "acme/catalog", forgetest.ReadOnly())
	fg := newGitHub(t, gh)
	_, err := fg.Create(context.Background(), "publish/c1", "main", forge.Change{Title: "t", Body: "b"})
	var pe *forge.PermissionError
	if !errors.As(err, &pe) || pe.Status != 403 || pe.Op != "create pull request" ||
		!strings.HasPrefix(pe.Need, "Pull requests: write") || !strings.Contains(pe.Need, "Contents: write") ||
		pe.Message != "Resource not accessible by personal access token" {
		t.Errorf("Create with a read-only token = %#v", err)
	}
}

func TestGitHubBadToken(t *testing.T) {
	testBadToken(t, "github", forgetest.NewGitHub(t, "acme/catalog"))
}

func TestGitHubBodyLimit(t *testing.T) {
	testBodyLimit(t, "github", forgetest.NewGitHub(t, "acme/catalog"))
}

func TestGitHubAutoMergeNotAllowed(t *testing.T) {
	gh := forgetest.NewGitHub(t, "acme/catalog", forgetest.NoAutoMerge())
	fg := newGitHub(t, gh)
	ctx := context.Background()
	p, err := fg.Create(ctx, "publish/c1", "main", forge.Change{Title: "t", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	err = fg.AutoMerge(ctx, p, "merge")
	if !errors.Is(err, forge.ErrAutoMergeUnsupported) || !strings.Contains(err.Error(), "Allow auto-merge") {
		t.Errorf("AutoMerge = %v, want ErrAutoMergeUnsupported naming the setting", err)
	}
}

func TestGitHubAutoMergeWhenMergeable(t *testing.T) {
	// No required check pending: GitHub refuses to enable auto-merge ("clean
	// status") and forge merges at once.
	gh := forgetest.NewGitHub(t, "acme/catalog", forgetest.Mergeable())
	fg := newGitHub(t, gh)
	ctx := context.Background()
	p, err := fg.Create(ctx, "publish/c1", "main", forge.Change{Title: "t", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	// Without the node ID, AutoMerge reads the PR first.
	if err := fg.AutoMerge(ctx, &forge.PullRequest{Number: p.Number}, "rebase"); err != nil {
		t.Fatal(err)
	}
	if s := gh.PRs()[0].State; s != "merged" {
		t.Errorf("state = %q, want merged", s)
	}
}

func TestGitHubAutoMergeHeadMoved(t *testing.T) {
	gh := forgetest.NewGitHub(t, "acme/catalog")
	fg := newGitHub(t, gh)
	ctx := context.Background()
	p, err := fg.Create(ctx, "publish/c1", "main", forge.Change{Title: "t", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	gh.SetHead("publish/c1", strings.Repeat("ab", 20))
	if err := fg.AutoMerge(ctx, p, "merge"); err == nil || errors.Is(err, forge.ErrAutoMergeUnsupported) {
		t.Errorf("AutoMerge after the head moved = %v, want an error", err)
	}
	if m := gh.AutoMerge(p.Number); m != "" {
		t.Errorf("auto-merge enabled (%q) on a moved head", m)
	}
}

func TestGitHubMissing(t *testing.T) {
	testMissing(t, "github", forgetest.NewGitHub(t, "acme/catalog"))
}
