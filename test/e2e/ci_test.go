package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/bundle"
)

// prWorld is a package repo whose master branch (tiny 1.0.0) is published
// to a local catalog, and a checked-out branch "feature" that adds tiny
// 1.2.0: a pull request. Registries are in process (plain HTTP, loopback).
type prWorld struct {
	t                *testing.T
	reg, source, cat string
	workdir          string
}

func newPRWorld(t *testing.T) *prWorld {
	testingShort(t)
	srv := httptest.NewServer(registry.New(registry.Logger(nopLog())))
	t.Cleanup(srv.Close)
	w := &prWorld{t: t, reg: strings.TrimPrefix(srv.URL, "http://"), source: t.TempDir(), cat: t.TempDir(), workdir: t.TempDir()}
	repo, err := git.PlainInit(w.source, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := git.PlainInit(w.cat, true); err != nil {
		t.Fatal(err)
	}
	w.tiny(repo, "1.0.0")
	w.commit(repo, "tiny 1.0.0")
	if out, code := w.publish(nil, "run", "--catalog", w.cat, "--dst-registry", w.reg+"/mirror"); code != 0 {
		t.Fatalf("publish run: %d\n%s", code, out)
	}
	head, _ := repo.Head()
	wt, _ := repo.Worktree()
	if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName("feature"), Create: true, Hash: head.Hash()}); err != nil {
		t.Fatal(err)
	}
	w.tiny(repo, "1.2.0")
	w.commit(repo, "tiny 1.2.0")
	return w
}

func (w *prWorld) tiny(repo *git.Repository, v string) {
	t := w.t
	for _, img := range []string{"manager", "worker"} {
		ri, _ := random.Image(256, 1)
		if err := remote.Write(mustRef(t, w.reg+"/tiny/"+img+":v"+v), ri); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	from := "../../internal/pipeline/testdata/bundles/tiny/1.0.0"
	filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		data, _ := os.ReadFile(p)
		os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755)
		return os.WriteFile(filepath.Join(dir, rel), []byte(strings.ReplaceAll(strings.ReplaceAll(string(data), "REGISTRY", w.reg), "1.0.0", v)), 0o644)
	})
	img, err := bundle.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, w.reg+"/tiny/bundle:v"+v), img); err != nil {
		t.Fatal(err)
	}
	m := "apiVersion: app.alauda.cn/v1beta1\nkind: PackageManifest\nmetadata:\n  name: tiny.v" + v + "\nspec:\n  type: bundle\n  artifact: " + w.reg + "/tiny/bundle:v" + v +
		"\n  version: v" + v + "\n  arch: [linux/amd64]\n  info:\n    displayName: Tiny\n  relatedImages:\n  - " + w.reg + "/tiny/manager:v" + v + "\n  - " + w.reg + "/tiny/worker:v" + v + "\n"
	p := filepath.Join(w.source, "packages/tiny", v, "manifest.yaml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(m), 0o644)
}

func (w *prWorld) commit(repo *git.Repository, msg string) {
	wt, _ := repo.Worktree()
	wt.AddWithOptions(&git.AddOptions{All: true})
	if _, err := wt.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "d", Email: "d@example.com", When: time.Unix(1750000000, 0)}}); err != nil {
		w.t.Fatal(err)
	}
}

// publish runs the binary in the package repo with exactly env (plus PATH
// and HOME), so that no CI variable of the machine running the tests leaks
// in.
func (w *prWorld) publish(env []string, args ...string) (string, int) {
	cmd := exec.Command(publishBin, args...)
	cmd.Dir = w.source
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.workdir, "DOCKER_CONFIG=" + w.workdir}, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		w.t.Fatal(err)
	}
	return out.String(), 0
}

// TestGitHubActionsPullRequest runs `publish plan` as the GitHub Action
// would: inputs as INPUT_* variables, a pull_request event, output and
// summary files.
func TestGitHubActionsPullRequest(t *testing.T) {
	w := newPRWorld(t)
	event := filepath.Join(w.workdir, "event.json")
	os.WriteFile(event, []byte(`{"action":"opened","number":7,"pull_request":{"number":7,"base":{"ref":"master"},"head":{"ref":"feature"}}}`), 0o644)
	outputs := filepath.Join(w.workdir, "output")
	summary := filepath.Join(w.workdir, "summary.md")
	planJSON := filepath.Join(w.workdir, "plan.json")
	os.WriteFile(outputs, nil, 0o644)
	os.WriteFile(summary, nil, 0o644)
	secret := "s3cr3t-registry-password"
	out, code := w.publish([]string{
		"GITHUB_ACTIONS=true", "GITHUB_EVENT_NAME=pull_request", "GITHUB_EVENT_PATH=" + event,
		"GITHUB_BASE_REF=master", "GITHUB_HEAD_REF=feature", "GITHUB_WORKSPACE=" + w.source,
		"GITHUB_OUTPUT=" + outputs, "GITHUB_STEP_SUMMARY=" + summary,
		"INPUT_COMMAND=plan", "INPUT_CATALOG=" + w.cat, "INPUT_DST-REGISTRY=" + w.reg + "/mirror",
		"INPUT_DST-PASSWORD=" + secret, "INPUT_PLAN-JSON=" + planJSON,
	}, "plan")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "::add-mask::"+secret) {
		t.Errorf("the secret input was not masked:\n%s", out)
	}
	if strings.Contains(out, "reading the whole package repo") {
		t.Errorf("the plan of a published catalog was not incremental:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, secret) && !strings.HasPrefix(line, "::add-mask::") {
			t.Errorf("the secret appears outside a mask command: %s", line)
		}
	}
	if !regexp.MustCompile(`(?m)^::warning [^:]*file=packages/tiny/1\.2\.0/manifest\.yaml,line=\d+`).MatchString(out) {
		t.Errorf("no annotation for the changed version's warnings:\n%s", out)
	}
	if strings.Contains(out, "file=packages/tiny/1.0.0/") {
		t.Errorf("an unchanged version was annotated:\n%s", out)
	}
	o, _ := os.ReadFile(outputs)
	for _, want := range []string{"changed<<", "true", "artifacts<<", "tiny", "plan-json<<", planJSON} {
		if !strings.Contains(string(o), want) {
			t.Errorf("GITHUB_OUTPUT lacks %q:\n%s", want, o)
		}
	}
	s, _ := os.ReadFile(summary)
	if !strings.Contains(string(s), "## publish plan") || !strings.Contains(string(s), "1.2.0 (added)") {
		t.Errorf("job summary:\n%s", s)
	}
	var plan struct {
		SchemaVersion int `json:"schemaVersion"`
		Source        struct {
			BaseFrom string `json:"baseFrom"`
		} `json:"source"`
		Summary struct {
			Upgraded int `json:"upgraded"`
		} `json:"summary"`
	}
	data, err := os.ReadFile(planJSON)
	if err != nil || json.Unmarshal(data, &plan) != nil || plan.SchemaVersion != 1 || plan.Source.BaseFrom != "merge-base" || plan.Summary.Upgraded != 1 {
		t.Errorf("plan JSON (%v): %s", err, data)
	}
}

// TestNoCI: the same plan with no CI variable at all prints plain output;
// GITHUB_ACTIONS without its files must not panic either.
func TestNoCI(t *testing.T) {
	w := newPRWorld(t)
	out, code := w.publish(nil, "plan", "--catalog", w.cat, "--dst-registry", w.reg+"/mirror", "--target-branch", "master")
	if code != 0 || strings.Contains(out, "::") || !strings.Contains(out, "## publish plan") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	out, code = w.publish([]string{"GITHUB_ACTIONS=true"}, "plan", "--catalog", w.cat, "--dst-registry", w.reg+"/mirror", "--target-branch", "master")
	if code != 0 || strings.Contains(out, "panic") {
		t.Fatalf("GITHUB_ACTIONS without GITHUB_OUTPUT: exit %d:\n%s", code, out)
	}
}

// TestGitLabMergeRequest: merge-request variables select PR mode; findings
// go to a Code Quality report.
func TestGitLabMergeRequest(t *testing.T) {
	w := newPRWorld(t)
	report := filepath.Join(w.workdir, "gl-code-quality-report.json")
	out, code := w.publish([]string{
		"GITLAB_CI=true", "CI_MERGE_REQUEST_IID=3", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME=master",
		"PUBLISH_CODEQUALITY_REPORT=" + report, "PUBLISH_CATALOG=" + w.cat, "PUBLISH_DST_REGISTRY=" + w.reg + "/mirror",
		// As examples/gitlab-ci.yml: a report directory that does not exist yet.
		"PUBLISH_REPORT_DIR=publish-report", "PUBLISH_PLAN_JSON=publish-report/plan.json",
	}, "plan")
	if code != 0 || !strings.Contains(out, "1.2.0 (added)") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(w.source, "publish-report/plan.json")); err != nil {
		t.Errorf("plan JSON not written: %v", err)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var issues []struct {
		Description string `json:"description"`
		Location    struct {
			Path string `json:"path"`
		} `json:"location"`
	}
	if err := json.Unmarshal(data, &issues); err != nil || len(issues) == 0 || issues[0].Location.Path != "packages/tiny/1.2.0/manifest.yaml" {
		t.Errorf("code quality report (%v): %s", err, data)
	}
}

// TestLintCommand: `publish lint` reads the bundles and checks the images,
// prints violet-like text, and SARIF for code scanning; a broken manifest
// is exit 1 with file:line:col.
func TestLintCommand(t *testing.T) {
	w := newPRWorld(t)
	out, code := w.publish(nil, "lint")
	if code != 0 || !strings.Contains(out, "lint ok") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if out, code := w.publish(nil, "lint", "packages/no-such-operator"); code != 2 || !strings.Contains(out, "packages/no-such-operator: no such file") {
		t.Errorf("a path that does not exist: exit %d:\n%s", code, out)
	}
	out, code = w.publish(nil, "lint", "--format", "sarif", "packages/tiny/1.2.0")
	var sarif struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []struct {
				RuleID string `json:"ruleId"`
			} `json:"results"`
		} `json:"runs"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &sarif) != nil || sarif.Version != "2.1.0" || len(sarif.Runs) != 1 {
		t.Fatalf("sarif: exit %d:\n%s", code, out)
	}
	p := filepath.Join(w.source, "packages/tiny/1.2.0/manifest.yaml")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(data), "version: v1.2.0", "version: v1.2.0\n  color: blue", 1)), 0o644)
	out, code = w.publish(nil, "lint")
	if code != 1 || !strings.Contains(out, "packages/tiny/1.2.0/manifest.yaml:9:3") || !strings.Contains(out, "lint failed") {
		t.Fatalf("broken manifest: exit %d:\n%s", code, out)
	}
}
