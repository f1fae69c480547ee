package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/elliptic"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/testenv"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"sigs.k8s.io/yaml"
)

// CosignVersion is the cosign CLI hack/cosign/build.sh builds by default.
const CosignVersion = "v3.1.3"

// cosignBin is $PUBLISH_COSIGN, else the binary hack/cosign/build.sh
// caches (~/.cache/operator-publish/cosign/<CosignVersion>/cosign).
// Missing: skip, or fail when integration tests are required.
func cosignBin(t *testing.T) string {
	t.Helper()
	testenv.Short(t, "integration test")
	p := os.Getenv("PUBLISH_COSIGN")
	if p == "" {
		if c, err := os.UserCacheDir(); err == nil {
			p = filepath.Join(c, "operator-publish", "cosign", CosignVersion, "cosign")
		}
	}
	if fi, err := os.Stat(p); err != nil || p == "" || fi.IsDir() {
		testenv.Skipf(t, "this test needs the cosign CLI %s: run hack/cosign/build.sh (it caches it in ~/.cache/operator-publish/cosign), or set PUBLISH_COSIGN to the path it prints", CosignVersion)
	}
	return p
}

// cosignCLI runs the cosign binary against the destination registry of an
// env as a user would: its credentials in a Docker config (DOCKER_CONFIG)
// and the registries' CA in SSL_CERT_FILE, and nothing else of the test's
// environment but PATH. Nothing reaches Sigstore's
// public services: key verification with --insecure-ignore-tlog needs no
// trusted root (TUF_ROOT and HOME point at empty directories, so a lookup
// would fail rather than use a cache).
type cosignCLI struct {
	bin string
	env []string
}

func newCosignCLI(t *testing.T, e *env) *cosignCLI {
	t.Helper()
	return newCosignCLIAt(t, e, e.dst)
}

// newCosignCLIAt is newCosignCLI with the credentials of reg (e.src to
// sign at the source, as a vendor does).
func newCosignCLIAt(t *testing.T, e *env, reg *testenv.Registry) *cosignCLI {
	t.Helper()
	bin := cosignBin(t)
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host, auth)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"TUF_ROOT=" + filepath.Join(home, "tuf"),
		"DOCKER_CONFIG=" + dir,
		"SSL_CERT_FILE=" + e.caFile,
	}
	return &cosignCLI{bin: bin, env: env}
}

// run runs cosign with args and returns its combined output and whether
// it exited 0.
func (c *cosignCLI) run(t *testing.T, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("cosign %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), err == nil
}

// verify runs cosign verify --key pub --insecure-ignore-tlog=true ref with
// extra flags. With refusal "" it must pass; otherwise it must fail with
// refusal in its output (the reason cosign gives: the right refusal, not a
// registry or TLS error).
func (c *cosignCLI) verify(t *testing.T, refusal, pub, ref string, extra ...string) string {
	t.Helper()
	args := append([]string{"verify", "--key", pub, "--insecure-ignore-tlog=true"}, extra...)
	args = append(args, ref)
	out, ok := c.run(t, args...)
	switch {
	case refusal == "" && !ok:
		t.Errorf("cosign %s refuses it:\n%s", strings.Join(args, " "), out)
	case refusal != "" && ok:
		t.Errorf("cosign %s accepts it:\n%s", strings.Join(args, " "), out)
	case refusal != "" && !strings.Contains(out, refusal):
		t.Errorf("cosign %s refuses it, but not with %q:\n%s", strings.Join(args, " "), refusal, out)
	}
	return out
}

// What cosign v3.1.3 says when it refuses: no signature of either form
// (an unsigned image, or no .sig tag with --new-bundle-format=false), a
// bundle that does not verify with the key, a .sig tag that does not.
const (
	cosignNoSignature  = "no signatures found"
	cosignWrongBundle  = "no matching attestations: failed to verify signature"
	cosignWrongSigTag  = "no matching signatures: invalid signature"
	cosignBlobMismatch = "failed to verify signature"
)

// cosignKeyPair writes a key pair in cosign generate-key-pair's format
// (the private key encrypted with pass) and returns the files.
func cosignKeyPair(t *testing.T, pass string) (keyFile, pubFile string) {
	t.Helper()
	priv, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte(pass)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile, pubFile = filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.pub")
	if err := os.WriteFile(keyFile, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pubFile, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	return keyFile, pubFile
}

// TestCosignVerifies ("the real verifier accepts our
// signatures"): the cosign CLI (hack/cosign/build.sh, v3.1.3) verifies
// what publish signs with --cosign-key, on the Debian docker-registry
// (TLS, htpasswd, no referrers API: the referrers tag schema), offline
// with the public key (--insecure-ignore-tlog: a key signature made here
// has no transparency-log entry):
//
//   - the OCI catalog of run --oci, as a Sigstore bundle referrer (cosign
//     v3's default) and, with --cosign-sig-tag, as the legacy .sig tag
//     (--new-bundle-format=false);
//   - the olm target's catalog image, both forms;
//   - the archive of package --cosign-key, with cosign verify-blob
//     --bundle FILE.tgz.sigstore.json;
//
// and refuses another key, an unsigned image and a flipped byte of the
// archive, each with its own reason (not a registry or TLS error).
func TestCosignVerifies(t *testing.T) {
	cosignBin(t)
	const pass = "correct horse battery staple"
	keyFile, pubFile := cosignKeyPair(t, pass)
	_, otherPub := cosignKeyPair(t, "other")
	publish := func(t *testing.T, e *env, args ...string) {
		t.Helper()
		t.Setenv("PUBLISH_COSIGN_KEY_PASSWORD", pass)
		if out, errOut, code := e.publish(args...); code != 0 {
			t.Fatalf("publish run %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
		}
	}

	t.Run("oci", func(t *testing.T) {
		e := tinyEnv(t)
		c := newCosignCLI(t, e)
		// Bundle referrer only.
		repo := e.dst.Ref("platform/operator-catalog")
		publish(t, e, "--oci", repo, "--cosign-key", keyFile)
		ref := repo + "@" + e.digest(e.dst, repo+":global")
		out := c.verify(t, "", pubFile, ref)
		t.Logf("cosign verify of the bundle referrer:\n%s", out)
		// cosign v3 reads the bundle: without a .sig tag the legacy
		// form has nothing to verify.
		c.verify(t, cosignNoSignature, pubFile, ref, "--new-bundle-format=false")
		c.verify(t, cosignWrongBundle, otherPub, ref)

		// The same catalog pushed to another repository with the .sig tag
		// as well: both forms verify.
		legacy := e.dst.Ref("platform/legacy-catalog")
		publish(t, e, "--oci", legacy, "--cosign-key", keyFile, "--cosign-sig-tag")
		lref := legacy + "@" + e.digest(e.dst, legacy+":global")
		out = c.verify(t, "", pubFile, lref, "--new-bundle-format=false")
		t.Logf("cosign verify of the .sig tag:\n%s", out)
		c.verify(t, "", pubFile, lref)
		c.verify(t, cosignWrongSigTag, otherPub, lref, "--new-bundle-format=false")

		// A mirrored image nobody signed.
		unsigned := e.dstRef(e.src.Ref("tiny/manager:v1.0.0"))
		c.verify(t, cosignNoSignature, pubFile, strings.TrimSuffix(unsigned, ":v1.0.0")+"@"+e.digest(e.dst, unsigned))
	})

	t.Run("olm", func(t *testing.T) {
		e := tinyEnv(t)
		c := newCosignCLI(t, e)
		base := e.src.Ref("operator-framework/opm:v1.73.0")
		ri, _ := random.Image(512, 1)
		if err := remote.Write(mustRef(t, base), ri, e.src.Options()...); err != nil {
			t.Fatal(err)
		}
		cfg := fmt.Sprintf("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nclusters:\n  global:\n    target: olm\n    olm:\n      baseImage: %s\n      catalogImage: %s\n", base, e.dst.Ref("olm/catalog"))
		if err := os.WriteFile(filepath.Join(e.source, "publish.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		e.commit("the olm target")
		publish(t, e, "--cosign-key", keyFile, "--cosign-sig-tag")
		_, tree := e.catalog()
		var cs struct {
			Spec struct{ Image string } `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(fileIn(t, tree, "rendered/global/catalogsource.yaml")), &cs); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(cs.Spec.Image, "@sha256:") {
			t.Fatalf("CatalogSource image %q is not by digest", cs.Spec.Image)
		}
		out := c.verify(t, "", pubFile, cs.Spec.Image)
		t.Logf("cosign verify of the catalog image:\n%s", out)
		c.verify(t, "", pubFile, cs.Spec.Image, "--new-bundle-format=false")
		c.verify(t, cosignWrongBundle, otherPub, cs.Spec.Image)
		c.verify(t, cosignWrongSigTag, otherPub, cs.Spec.Image, "--new-bundle-format=false")
	})

	t.Run("archive", func(t *testing.T) {
		e := tinyEnv(t)
		c := newCosignCLI(t, e)
		archive := filepath.Join(t.TempDir(), "ops.tgz")
		cmd := exec.Command(publishBin, "package", "-o", archive, "--source", e.source, "--ca-file", e.caFile,
			"--src-username", e.src.Username, "--cosign-key", keyFile)
		cmd.Env = append(os.Environ(), "PUBLISH_SRC_PASSWORD="+e.src.Password, "PUBLISH_COSIGN_KEY_PASSWORD="+pass, "DOCKER_CONFIG="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("publish package: %v\n%s", err, out)
		}
		blob := func(pub string) (string, bool) {
			return c.run(t, "verify-blob", "--key", pub, "--bundle", archive+".sigstore.json", "--insecure-ignore-tlog=true", archive)
		}
		if out, ok := blob(pubFile); !ok {
			t.Errorf("cosign verify-blob refuses the archive:\n%s", out)
		} else {
			t.Logf("cosign verify-blob:\n%s", out)
		}
		if out, ok := blob(otherPub); ok || !strings.Contains(out, cosignBlobMismatch) {
			t.Errorf("cosign verify-blob with another key: exit 0 %v\n%s", ok, out)
		}
		// One flipped byte of the archive.
		data, err := os.ReadFile(archive)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 1
		if err := os.WriteFile(archive, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, ok := blob(pubFile); ok || !strings.Contains(out, cosignBlobMismatch) {
			t.Errorf("cosign verify-blob of a flipped byte: exit 0 %v\n%s", ok, out)
		} else {
			t.Logf("cosign verify-blob refuses a flipped byte:\n%s", out)
		}
	})

	t.Run("chart", func(t *testing.T) {
		e := tinyEnv(t)
		c := newCosignCLI(t, e)
		src := e.src.Ref("charts/hello:0.1.0")
		img, err := kind.ChartImage(src, helloChart(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(mustRef(t, src), img, e.src.Options()...); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(e.source, "packages/hello/0.1.0/manifest.yaml")
		os.MkdirAll(filepath.Dir(p), 0o755)
		m := "apiVersion: app.alauda.cn/v1beta1\nkind: PackageManifest\nmetadata:\n  name: hello.v0.1.0\nspec:\n  type: chart\n  artifact: oci://" + src + "\n  version: v0.1.0\n"
		if err := os.WriteFile(p, []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		e.commit("a chart")
		publish(t, e, "--cosign-key", keyFile)
		dst := e.dstRef(src)
		ref := strings.TrimSuffix(dst, ":0.1.0") + "@" + e.digest(e.dst, dst)
		out := c.verify(t, "", pubFile, ref)
		t.Logf("cosign verify of the chart:\n%s", out)
		c.verify(t, cosignWrongBundle, otherPub, ref)
	})
}

// helloChart is the archive of chart hello 0.1.0, as helm package makes
// it: a ConfigMap and no image.
func helloChart(t *testing.T) []byte { return helloChartAt(t, "0.1.0") }

// helloChartAt is helloChart at version.
func helloChartAt(t *testing.T, version string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, data string }{
		{"hello/Chart.yaml", "apiVersion: v2\nname: hello\nversion: " + version + "\ndescription: Says hello.\n"},
		{"hello/templates/config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\ndata:\n  greeting: hello\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.data))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
