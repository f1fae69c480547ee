package forge_test

import (
	"context"
	"strings"
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

// Right after an MR is created GitLab is still computing whether it can be
// merged and answers the merge 405: AutoMerge asks again; past its
// attempts, or for an MR that is not merely being checked, it fails.
func TestGitLabAutoMergeWhileChecking(t *testing.T) {
	defer forge.SetGitLabRetryDelay(0)()
	ctx := context.Background()
	for _, tc := range []struct {
		checking int
		ok       bool
	}{{2, true}, {4, true}, {5, false}} {
		gl := forgetest.NewGitLab(t, "platform/catalog", forgetest.MergeStatusChecking(tc.checking))
		fg := open(t, "gitlab", gl)
		p, err := fg.Create(ctx, "publish/c1", "main", forge.Change{Title: "t", Body: "b"})
		if err != nil {
			t.Fatal(err)
		}
		err = fg.AutoMerge(ctx, p, "merge")
		if (err == nil) != tc.ok || (gl.AutoMerge(p.Number) == "merge") != tc.ok {
			t.Errorf("checking for %d attempts: AutoMerge = %v, auto-merge %q", tc.checking, err, gl.AutoMerge(p.Number))
		}
	}
	// A closed MR is not retried.
	gl := forgetest.NewGitLab(t, "platform/catalog")
	fg := open(t, "gitlab", gl)
	p, err := fg.Create(ctx, "publish/c1", "main", forge.Change{Title: "t", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	gl.Close(p.Number)
	if err := fg.AutoMerge(ctx, p, "merge"); err == nil || !strings.Contains(err.Error(), "405") {
		t.Errorf("AutoMerge of a closed MR = %v", err)
	}
	merges := 0
	for _, r := range gl.Requests() {
		if strings.HasSuffix(r.Path, "/merge") {
			merges++
		}
	}
	if merges != 1 {
		t.Errorf("%d merge requests for a closed MR, want 1", merges)
	}
}
