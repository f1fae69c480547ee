package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/operator-publish/publish/internal/forge/forgetest"
)

// TestGitHubActionsPullRequestDelivery runs `publish run` as the GitHub
// Action would with delivery: pull-request against the GitHub contract
// fake: the change (tiny 1.2.0) goes to the rolling branch publish/global
// and one pull request, not to the catalog branch; the clusters output
// carries the pull request's URL and number; the forge token is masked
// and printed nowhere else; the full plan is in --plan-dir for the job to
// upload, and the body links to the run's page.
func TestGitHubActionsPullRequestDelivery(t *testing.T) {
	w := newPRWorld(t)
	gh := forgetest.NewGitHub(t, "org/catalog")
	cat, _ := git.PlainOpen(w.cat)
	before, _ := cat.Reference(plumbing.NewBranchReferenceName("main"), true)
	outputs := filepath.Join(w.workdir, "output")
	os.WriteFile(outputs, nil, 0o644)
	out, code := w.publish([]string{
		"GITHUB_ACTIONS=true", "GITHUB_EVENT_NAME=push", "GITHUB_WORKSPACE=" + w.source,
		"GITHUB_OUTPUT=" + outputs, "GITHUB_SERVER_URL=https://github.example.com", "GITHUB_REPOSITORY=org/operators", "GITHUB_RUN_ID=42",
		"INPUT_COMMAND=run", "INPUT_CATALOG=" + w.cat, "INPUT_DST-REGISTRY=" + w.reg + "/mirror",
		"INPUT_DELIVERY=pull-request", "INPUT_FORGE=github", "INPUT_FORGE-API-URL=" + gh.URL(), "INPUT_FORGE-REPO=" + gh.Repo(),
		"INPUT_FORGE-TOKEN=" + gh.Token(), "INPUT_PR-LABEL=publish",
	}, "run")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "::add-mask::"+gh.Token()) {
		t.Errorf("the forge token was not masked:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, gh.Token()) && !strings.HasPrefix(line, "::add-mask::") {
			t.Errorf("the token appears outside a mask command: %s", line)
		}
	}
	after, _ := cat.Reference(plumbing.NewBranchReferenceName("main"), true)
	if after.Hash() != before.Hash() {
		t.Errorf("the catalog branch moved: %s -> %s", before.Hash(), after.Hash())
	}
	branch, err := cat.Reference(plumbing.NewBranchReferenceName("publish/global"), true)
	if err != nil {
		t.Fatalf("no rolling branch: %v\n%s", err, out)
	}
	prs := gh.PRs()
	if len(prs) != 1 || prs[0].Head != "publish/global" || !strings.Contains(prs[0].Body, "https://github.example.com/org/operators/actions/runs/42") || strings.Join(prs[0].Labels, ",") != "publish" {
		t.Fatalf("pull requests: %+v", prs)
	}
	o, _ := os.ReadFile(outputs)
	i := strings.Index(string(o), "clusters<<")
	if i < 0 {
		t.Fatalf("no clusters output:\n%s", o)
	}
	lines := strings.SplitN(string(o[i:]), "\n", 3)
	var cs []map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &cs); err != nil || len(cs) != 1 {
		t.Fatalf("clusters output %q: %v", lines[1], err)
	}
	c := cs[0]
	if c["delivery"] != "pull-request" || c["pr"] != prs[0].URL || c["prNumber"] != "1" || c["prAction"] != "opened" || c["commit"] != branch.Hash().String() || c["changed"] != false {
		t.Errorf("clusters output: %v", c)
	}
	for _, f := range []string{"publish-plan/global.md", "publish-plan/global.json"} {
		if _, err := os.Stat(filepath.Join(w.source, f)); err != nil {
			t.Errorf("full plan: %v", err)
		}
	}
	if !strings.Contains(out, "pr        opened #1 "+prs[0].URL) {
		t.Errorf("stdout does not name the pull request:\n%s", out)
	}
}
