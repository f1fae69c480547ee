package forge_test

import (
	"context"
	"testing"

	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/forge/forgetest"
)

func TestGitLabLifecycle(t *testing.T) {
	testLifecycle(t, "gitlab", forgetest.NewGitLab(t, "platform/operators/catalog"), "squash")
}

func TestGitLabReadOnly(t *testing.T) {
	testReadOnly(t, "gitlab", forgetest.NewGitLab(t, "platform/catalog", forgetest.ReadOnly()), "Developer role")
}

func TestGitLabBadToken(t *testing.T) {
	testBadToken(t, "gitlab", forgetest.NewGitLab(t, "platform/catalog"))
}

func TestGitLabBodyLimit(t *testing.T) {
	testBodyLimit(t, "gitlab", forgetest.NewGitLab(t, "platform/catalog"))
}

func TestGitLabAutoMergeMethods(t *testing.T) {
	gl := forgetest.NewGitLab(t, "platform/catalog")
	fg := open(t, "gitlab", gl)
	ctx := context.Background()
	p, err := fg.Create(ctx, "publish/c1", "main", forge.Change{Title: "t", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := fg.AutoMerge(ctx, p, "merge"); err != nil {
		t.Fatal(err)
	}
	if m := gl.AutoMerge(p.Number); m != "merge" {
		t.Errorf("auto-merge = %q, want merge", m)
	}
	gl.SetHead("publish/c1", "0123456789012345678901234567890123456789")
	if err := fg.AutoMerge(ctx, p, "merge"); err == nil {
		t.Error("AutoMerge with a stale head SHA passed; GitLab answers 409")
	}
}

func TestGitLabMissing(t *testing.T) {
	testMissing(t, "gitlab", forgetest.NewGitLab(t, "platform/catalog"))
}
