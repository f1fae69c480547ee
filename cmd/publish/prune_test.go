package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/forge/forgetest"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/prune"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestPrunePlan: `prune --plan` on a catalog checkout whose history
// delisted a version, against the Debian registry (TLS, htpasswd): the
// delisted version's bundle and own image are planned with their sizes and
// tags, the image it shares with the listed version is not, nothing is
// deleted, and the JSON plan and the Markdown agree.
func TestPrunePlan(t *testing.T) {
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	opts := reg.Options()
	push := func(repo, tag string) string { return pushRandom(t, reg.Host+"/"+repo+":"+tag, opts...) }
	b1, b2 := push("m/op/bundle", "v1.0.0"), push("m/op/bundle", "v2.0.0")
	own, shared := push("m/op/agent", "v1"), push("m/op/manager", "v1")
	image := func(repo, d string) model.Image {
		return model.Image{Source: "quay.io/" + repo, Destination: reg.Host + "/m/" + repo + "@" + d, Digest: d}
	}
	state := func(v1Present bool) []byte {
		data, err := (&gitops.State{Source: gitops.Source{Commit: "abc"}, Artifacts: []model.ArtifactRecord{{
			Name: "op", Present: true, Registry: reg.Host, Repository: "m/op/bundle",
			Versions: []model.VersionRecord{
				{Version: "1.0.0", Tag: "v1.0.0", Present: v1Present, BundleDigest: b1, Images: []model.Image{image("op/agent", own), image("op/manager", shared)}},
				{Version: "2.0.0", Tag: "v2.0.0", Present: true, BundleDigest: b2, Images: []model.Image{image("op/manager", shared)}},
			},
		}}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	dir := t.TempDir()
	gitCLI(t, dir, "init", "-q", "-b", "main")
	for i, present := range []bool{true, false} {
		commitStates(t, dir, []string{"2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"}[i], map[string][]byte{"global": state(present)})
	}
	planFile := filepath.Join(t.TempDir(), "prune.json")
	out, _, err := runPublishErr(t, "prune", "--catalog-dir", dir, "--plan", planFile, "--lookup",
		"--dst-registry", reg.Host, "--dst-username", reg.Username, "--dst-password", reg.Password, "--ca-file", reg.CAFile)
	if err != nil {
		t.Fatalf("prune --plan: %v\n%s", err, out)
	}
	data, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	var p prune.Plan
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 2 || p.Kept != 1 {
		t.Fatalf("entries %+v, kept %d: want 1.0.0's bundle and own image, the image it shares with 2.0.0 kept", p.Entries, p.Kept)
	}
	for _, e := range p.Entries {
		if e.At != "present" || e.Size == 0 || e.DelistedSince.Format("2006-01-02") != "2026-02-01" || e.Commit == "" {
			t.Errorf("entry %+v: want present with its size, delisted 2026-02-01 by a commit", e)
		}
		if e.Digest == shared {
			t.Errorf("the image 2.0.0 lists is planned: %+v", e)
		}
	}
	if !strings.Contains(out, "**2 manifests to delete**") || !strings.Contains(out, "`"+reg.Host+"/m/op/agent`") {
		t.Errorf("Markdown:\n%s", out)
	}
	for _, d := range []string{b1, own} {
		r, _ := name.ParseReference(reg.Host + "/m/op/bundle@" + d)
		if d == own {
			r, _ = name.ParseReference(reg.Host + "/m/op/agent@" + d)
		}
		if _, err := remote.Head(r, opts...); err != nil {
			t.Errorf("the plan deleted %s: %v", r, err)
		}
	}
	if strings.Contains(out, reg.Password) {
		t.Error("the password is printed")
	}

	// The plan as a pull request on the catalog repo (the GitHub contract
	// fake for the API, a bare repo for Git): its two files on
	// publish/prune, the Markdown as the body; a second plan updates it.
	bare := filepath.Join(t.TempDir(), "catalog.git")
	gitCLI(t, "", "clone", "-q", "--bare", dir, bare)
	gh := forgetest.NewGitHub(t, "org/catalog")
	pr := []string{"prune", "--catalog-dir", dir, "--plan", planFile, "--pull-request", "--catalog", bare,
		"--forge", "github", "--forge-api-url", gh.URL(), "--forge-repo", gh.Repo(), "--forge-token", gh.Token()}
	for i, action := range []string{"opened", "updated"} {
		if i == 1 {
			pr = append(pr, "--older-than", "1s") // another plan
		}
		out, _, err = runPublishErr(t, pr...)
		if err != nil || !strings.Contains(out, "prune: pull request "+action+" #1") {
			t.Fatalf("prune --pull-request (%s): %v\n%s", action, err, out)
		}
	}
	prs := gh.PRs()
	if len(prs) != 1 || prs[0].Head != "publish/prune" || prs[0].Base != "main" || !strings.Contains(prs[0].Body, "**2 manifests to delete**") || !strings.Contains(prs[0].Body, "publish prune --apply publish/prune/plan.json") {
		t.Fatalf("pull requests: %+v", prs)
	}
	onBranch := gitCLI(t, bare, "show", "publish/prune:publish/prune/plan.json")
	var proposed prune.Plan
	if err := json.Unmarshal([]byte(onBranch), &proposed); err != nil || len(proposed.Entries) != 2 || proposed.OlderThan != "1s" {
		t.Errorf("publish/prune/plan.json on the branch: %v %+v", err, proposed)
	}
	if main := gitCLI(t, bare, "rev-parse", "main"); main != gitCLI(t, dir, "rev-parse", "HEAD") {
		t.Errorf("the catalog branch moved to %s", main)
	}
}

// gitCLI runs git in dir ("": the current directory) and returns its
// trimmed output; a failure fails the test.
func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return gitAt(t, dir, "", args...)
}

// gitAt is gitCLI with the author and committer date date (RFC 3339, ""
// for now) and a fixed identity.
func gitAt(t *testing.T, dir, date string, args ...string) string {
	t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.Command(testenv.Require(t, "git", "git"), args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	if date != "" {
		cmd.Env = append(cmd.Env, "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	}
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("git %v: %v\n%s%s", args, err, out, stderr)
	}
	return strings.TrimSpace(string(out))
}

// commitStates writes the state file of each cluster (its bytes) into the
// catalog checkout dir and commits them at date.
func commitStates(t *testing.T, dir, date string, states map[string][]byte) {
	t.Helper()
	for cl, data := range states {
		p := filepath.Join(dir, filepath.FromSlash(gitops.StatePath(cl)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitAt(t, dir, date, "add", "-A")
	gitAt(t, dir, date, "commit", "-q", "-m", "publish")
}
