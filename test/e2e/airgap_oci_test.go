package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestAirgapOCICatalog is the OCI catalog of an archive through the binary: `publish
// package --catalog --cluster global` (the catalog on the Git server, basic
// auth) carries the OCI catalog, `publish verify` shows it, and `publish
// push --oci` pushes it with the images to a site's Debian docker-registry
// (TLS, htpasswd), at the tag of the cluster, with the digest package
// printed.
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
	bin := func(args ...string) string {
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
		if err := cmd.Run(); err != nil {
			t.Fatalf("publish %s: %v\n%s\n%s", args[0], err, o.String(), er.String())
		}
		return o.String()
	}
	archive := filepath.Join(t.TempDir(), "ops.tgz")
	out := bin("package", "-o", archive, "--source", e.source, "--ca-file", caFile,
		"--src-username", e.src.Username,
		"--catalog", e.catalogURL, "--catalog-username", e.git.Username, "--cluster", "global")
	_, line, ok := strings.Cut(out, "catalog   OCI catalog of cluster global: ")
	if !ok {
		t.Fatalf("package printed no OCI catalog:\n%s", out)
	}
	digest := strings.TrimSpace(strings.SplitN(line, "\n", 2)[0])
	if v := bin("verify", archive); !strings.Contains(v, "catalog   OCI catalog of cluster global: "+digest) {
		t.Errorf("verify:\n%s", v)
	}
	ref := site.Ref("platform/operator-catalog")
	out = bin("push", archive, "--dst-registry", site.Host+"/mirror", "--ca-file", caFile,
		"--dst-username", site.Username, "--oci", ref)
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
