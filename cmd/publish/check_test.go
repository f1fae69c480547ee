package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/operator-publish/publish/internal/ci"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/target"
)

// checkCatalog is a catalog repo rendered for global as publish renders
// it: master holds tiny 1.0.0, the checked-out branch "change" adds 1.1.0
// and delists 1.0.0.
func checkCatalog(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "kustomize/clusters/global"), 0o755)
	os.WriteFile(filepath.Join(dir, "kustomize/clusters/global/kustomization.yaml"), []byte("resources:\n- ../../../publish/generated/global\n"), 0o644)
	wt, _ := repo.Worktree()
	publish := func(msg string, vs ...model.VersionRecord) {
		arts := []model.ArtifactRecord{{Name: "tiny", Present: true, Registry: "reg.example.com", Repository: "ops/tiny-bundle", Versions: vs}}
		key, err := target.RenderIntoDir(dir, "global", render.Config{}, arts, "")
		if err != nil {
			t.Fatal(err)
		}
		data, _ := (&gitops.State{Artifacts: arts, Rendered: map[string]string{"global": key}}).Marshal()
		os.WriteFile(filepath.Join(dir, gitops.StatePath("global")), data, 0o644)
		wt.AddWithOptions(&git.AddOptions{All: true})
		if _, err := wt.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000, 0)}}); err != nil {
			t.Fatal(err)
		}
	}
	publish("one", model.VersionRecord{Version: "1.0.0", Tag: "v1.0.0", Present: true})
	if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName("change"), Create: true}); err != nil {
		t.Fatal(err)
	}
	publish("two", model.VersionRecord{Version: "1.0.0", Tag: "v1.0.0", Present: false}, model.VersionRecord{Version: "1.1.0", Tag: "v1.1.0", Present: true})
	return dir
}

// runCheckIn runs `publish check` as main does in the CI that env
// describes, and returns stdout and the exit code.
func runCheckIn(t *testing.T, env map[string]string, args ...string) (string, int) {
	t.Helper()
	getenv := func(k string) string { return env[k] }
	var out bytes.Buffer
	inv := newInvocation(ci.Detect(getenv, &out))
	inv.env = getenv
	inv.log = logTo(&out).log
	root := newRoot(inv)
	root.SetArgs(append([]string{"check"}, args...))
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.ExecuteContext(t.Context())
	code := 0
	if err != nil {
		code = exitCode(err)
		out.WriteString(err.Error() + "\n")
	}
	t.Logf("publish check %s: exit %d\n%s", strings.Join(args, " "), code, out.String())
	return out.String(), code
}

// TestCheckCommand: exit 0 on a clean catalog, with the summary of the
// pull request (against its merge base) in the GitHub job summary; exit 1
// with an annotation at a hand-edited file, and a GitLab Code Quality
// entry; exit 2 for a cluster the catalog lacks.
func TestCheckCommand(t *testing.T) {
	dir := checkCatalog(t)
	summary := filepath.Join(t.TempDir(), "summary.md")
	gh := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_BASE_REF": "master", "GITHUB_STEP_SUMMARY": summary}
	out, code := runCheckIn(t, gh, "--catalog-dir", dir)
	if code != 0 || !strings.Contains(out, "check ok") || !strings.Contains(out, "global: tiny: v1.0.0 delisted, v1.1.0 listed") {
		t.Fatalf("clean catalog: exit %d\n%s", code, out)
	}
	md, _ := os.ReadFile(summary)
	if !strings.Contains(string(md), "## publish check") || !strings.Contains(string(md), "the merge base with the target branch") || !strings.Contains(string(md), "| `tiny` | — | `v1.0.0` delisted, `v1.1.0` listed |") {
		t.Errorf("job summary:\n%s", md)
	}

	p := "rendered/global/tiny/artifactversion_tiny.v1.1.0.yaml"
	data, _ := os.ReadFile(filepath.Join(dir, p))
	os.WriteFile(filepath.Join(dir, p), []byte(strings.Replace(string(data), "tag: v1.1.0", "tag: v1.1.1", 1)), 0o644)
	out, code = runCheckIn(t, gh, "--catalog-dir", dir)
	if code != 1 || !strings.Contains(out, "::error file="+p+",line=") || !strings.Contains(out, "check failed: 1 problem") {
		t.Errorf("hand edit: exit %d, want 1 and an annotation at %s\n%s", code, p, out)
	}

	cq := filepath.Join(t.TempDir(), "cq.json")
	gl := map[string]string{"GITLAB_CI": "true", ci.EnvCodeQuality: cq}
	if _, code = runCheckIn(t, gl, "--catalog-dir", dir, "--cluster", "global"); code != 1 {
		t.Errorf("GitLab: exit %d, want 1", code)
	}
	if report, _ := os.ReadFile(cq); !strings.Contains(string(report), `"path": "`+p+`"`) || !strings.Contains(string(report), `"check_name": "check/drift"`) {
		t.Errorf("Code Quality report:\n%s", report)
	}

	if _, code = runCheckIn(t, nil, "--catalog-dir", dir, "--cluster", "nope"); code != 2 {
		t.Errorf("--cluster nope: exit %d, want 2", code)
	}
}

// TestCheckNothingChecked: a catalog with no cluster to re-render is not
// "check ok" and does not exit 0: nothing was verified.
func TestCheckNothingChecked(t *testing.T) {
	dir := t.TempDir()
	if _, err := git.PlainInit(dir, false); err != nil {
		t.Fatal(err)
	}
	out, code := runCheckIn(t, nil, "--catalog-dir", dir)
	if code != 1 || strings.Contains(out, "check ok") || !strings.Contains(out, "nothing checked") {
		t.Errorf("empty catalog: exit %d, want 1 and nothing checked\n%s", code, out)
	}
}
