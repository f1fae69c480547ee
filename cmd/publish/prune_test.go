package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

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
	push := func(repo, tag string) string {
		img, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := name.ParseReference(reg.Host + "/" + repo + ":" + tag)
		if err := remote.Write(ref, img, opts...); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		return d.String()
	}
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
	git := func(date string, args ...string) {
		cmd := exec.Command(testenv.Require(t, "git", "git"), append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	sp := filepath.Join(dir, filepath.FromSlash(gitops.StatePath("global")))
	os.MkdirAll(filepath.Dir(sp), 0o755)
	git("2026-01-01T00:00:00Z", "init", "-q", "-b", "main")
	for i, present := range []bool{true, false} {
		os.WriteFile(sp, state(present), 0o644)
		date := []string{"2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"}[i]
		git(date, "add", "-A")
		git(date, "commit", "-q", "-m", "publish")
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
	if len(p.Entries) != 2 || p.Kept != 2 {
		t.Fatalf("entries %+v, kept %d: want 1.0.0's bundle and own image, 2 kept", p.Entries, p.Kept)
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
}
