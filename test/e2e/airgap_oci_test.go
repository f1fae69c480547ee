package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestAirgapOCICatalog is the OCI catalog of an archive through the binary: `publish
// package --catalog --cluster global` (the catalog on the Git server, basic
// auth) carries the OCI catalog, `publish verify` shows it, and `publish
// push --oci` pushes it with the images to a site's Debian docker-registry
// (TLS, htpasswd), at the tag of the cluster, with the digest package
// printed. Before the site's overlay patches the Artifacts' registry to the
// site's, the push stops (exit 1) naming both registries.
func TestAirgapOCICatalog(t *testing.T) {
	e := tinyEnv(t)
	if out, errOut, code := e.publish(); code != 0 {
		t.Fatalf("publish run: exit %d\n%s\n%s", code, out, errOut)
	}
	site := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	ca, err := os.ReadFile(e.caFile)
	if err != nil {
		t.Fatal(err)
	}
	siteCA, err := os.ReadFile(site.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, append(ca, siteCA...), 0o644)
	run := func(args ...string) (string, string, error) {
		t.Helper()
		cmd := exec.Command(publishBin, args...)
		cmd.Env = append(os.Environ(),
			"PUBLISH_SRC_PASSWORD="+e.src.Password,
			"PUBLISH_DST_PASSWORD="+site.Password,
			"PUBLISH_CATALOG_PASSWORD="+e.git.Password,
			"DOCKER_CONFIG="+t.TempDir(),
		)
		var o, er bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &er
		err := cmd.Run()
		return o.String(), er.String(), err
	}
	bin := func(args ...string) string {
		t.Helper()
		o, er, err := run(args...)
		if err != nil {
			t.Fatalf("publish %s: %v\n%s\n%s", args[0], err, o, er)
		}
		return o
	}
	archive := filepath.Join(t.TempDir(), "ops.tgz")
	pkg := []string{"package", "-o", archive, "--source", e.source, "--ca-file", caFile,
		"--src-username", e.src.Username,
		"--catalog", e.catalogURL, "--catalog-username", e.git.Username, "--cluster", "global"}
	ref := site.Ref("platform/operator-catalog")
	push := []string{"push", archive, "--dst-registry", site.Host + "/mirror", "--ca-file", caFile,
		"--dst-username", site.Username, "--oci", ref}
	bin(pkg...)
	if o, er, err := run(push...); err == nil || !strings.Contains(er, "connected side's registry "+e.dst.Host) || !strings.Contains(er, "puts the bundles in "+site.Host) {
		t.Fatalf("push --oci of a catalog naming %s to %s: %v\n%s\n%s", e.dst.Host, site.Host, err, o, er)
	}
	e.patchOverlay("global", site.Host)
	out := bin(pkg...)
	_, line, ok := strings.Cut(out, "catalog   OCI catalog of cluster global: ")
	if !ok {
		t.Fatalf("package printed no OCI catalog:\n%s", out)
	}
	digest := strings.TrimSpace(strings.SplitN(line, "\n", 2)[0])
	if v := bin("verify", archive); !strings.Contains(v, "catalog   OCI catalog of cluster global: "+digest) {
		t.Errorf("verify:\n%s", v)
	}
	out = bin(push...)
	if !strings.Contains(out, "pushed    "+ref+":global@"+digest) {
		t.Errorf("push did not say it pushed the OCI catalog to %s:global@%s:\n%s", ref, digest, out)
	}
	desc, err := remote.Head(mustRef(t, ref+":global"), site.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest.String() != digest {
		t.Errorf("%s:global points at %s, package printed %s", ref, desc.Digest, digest)
	}
}

// patchOverlay commits to the catalog repo a patch of cluster's overlay
// that sets every Artifact's spec.registry to registry (the site's, as
// docs/airgap.md says to).
func (e *env) patchOverlay(cluster, registry string) {
	e.t.Helper()
	auth := &githttp.BasicAuth{Username: e.git.Username, Password: e.git.Password}
	dir := e.t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: e.catalogURL, Auth: auth})
	if err != nil {
		e.t.Fatal(err)
	}
	p := filepath.Join(dir, "kustomize/clusters", cluster, "kustomization.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		e.t.Fatal(err)
	}
	data = append(data, "patches:\n- target: {kind: Artifact}\n  patch: |-\n    - op: replace\n      path: /spec/registry\n      value: "+registry+"\n"...)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		e.t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	wt.Add(".")
	if _, err := wt.Commit("the site's registry", &git.CommitOptions{Author: &object.Signature{Name: "u", Email: "u@example.com", When: time.Unix(1750000000, 0)}}); err != nil {
		e.t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{Auth: auth}); err != nil {
		e.t.Fatal(err)
	}
}
