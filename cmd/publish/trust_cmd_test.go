package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/sign"
	"github.com/operator-publish/publish/internal/testenv"
	"github.com/operator-publish/publish/internal/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// TestVerifyTrustMaterial: publish verify of an archive that carries
// trust material (a key rule, a keyless rule whose trusted root has a CA
// certificate expiring in 10 days) reads it offline, from the archive
// alone: it counts the rules, keys and roots, and warns for the
// certificate within the default 30 days and within --valid-until 20
// days from now, not within 5; a --valid-until that is no date is a usage
// error. publish push verifies the image it put at the site with the
// archive's rule: an unsigned image passes under if-signed, and fails
// the push under enforce. Then an archive of three images, one signed
// with the rule's key (a Sigstore bundle referrer and a .sig tag), one
// unsigned and one signed with a foreign key, is verified offline (the
// source registry stopped) with the signatures it carries: if-signed
// fails on the foreign one alone, enforce on it and the unsigned one,
// warn and off pass; each failure names the line of the archive's
// PackageManifest that names the image, its index.json entry and
// artifact, and the counts are per artifact.
func TestVerifyTrustMaterial(t *testing.T) {
	_, pubPEM, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	src := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(src.Close)
	host := strings.TrimPrefix(src.URL, "http://")
	ref := host + "/example/app:v1"
	img, _ := random.Image(512, 1)
	r, _ := name.ParseReference(ref)
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "vendor.pub"), pubPEM, 0o644)
	os.WriteFile(filepath.Join(dir, "root.json"), testenv.ExpiringTrustedRoot(t, time.Now().AddDate(0, 0, 10)), 0o644)
	// The image is unsigned: if-signed accepts it, enforce refuses it.
	archiveWith := func(mode string) string {
		os.WriteFile(filepath.Join(dir, config.FileName), []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nverify:\n"+
			"- match: "+host+"/example/*\n  mode: "+mode+"\n  key: vendor.pub\n"+
			"- match: ghcr.io/example/*\n  keyless: {issuer: https://issuer.example.com, subject: release@example.com}\n  trustedRoot: root.json\n"), 0o644)
		c, err := config.Load(filepath.Join(dir, config.FileName), true)
		if err != nil {
			t.Fatal(err)
		}
		trust, err := verify.TrustFiles(c)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), mode+".tgz")
		if _, err := archive.WriteFile(t.Context(), out, archive.PackageOptions{Images: []archive.Image{{Ref: ref, Bundle: true}}, Trust: trust}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	out, enforced := archiveWith("if-signed"), archiveWith("enforce")
	src.Close() // the far side: no source registry, only the archive

	run := func(args ...string) (string, error) {
		root := newRootCmd()
		root.SetArgs(args)
		var buf bytes.Buffer
		root.SetOut(&buf)
		root.SetErr(&buf)
		err := root.Execute()
		return buf.String(), err
	}
	const warning = `trust/roots/verify-L7.json: Fulcio CA root certificate "CN=test fulcio" expires`
	for _, tc := range []struct {
		args []string
		warn bool
	}{
		{nil, true},
		{[]string{"--valid-until", time.Now().AddDate(0, 0, 20).Format("2006-01-02")}, true},
		{[]string{"--valid-until", time.Now().AddDate(0, 0, 5).Format(time.RFC3339)}, false},
	} {
		text, err := run(append([]string{"verify", out}, tc.args...)...)
		if err != nil || !strings.Contains(text, "trust     2 verify rules, 1 keys, 1 trusted roots (trust/policy.json)") {
			t.Fatalf("verify %v: %v\n%s", tc.args, err, text)
		}
		if strings.Contains(text, warning) != tc.warn {
			t.Errorf("verify %v: warning %v, want %v:\n%s", tc.args, !tc.warn, tc.warn, text)
		}
	}
	if text, err := run("verify", out, "--valid-until", "next month"); err == nil || !strings.Contains(err.Error(), "--valid-until") {
		t.Errorf("--valid-until next month: %v\n%s", err, text)
	}

	// push verifies what it put at the site with the archive's policy.
	dst := httptest.NewServer(ggcrregistry.New(ggcrregistry.WithReferrersSupport(true), ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(dst.Close)
	site := strings.TrimPrefix(dst.URL, "http://") + "/site"
	text, err := run("push", out, "--dst-registry", site, "--plain-http")
	if err != nil || !strings.Contains(text, "push: verify with the archive's trust material: 1 images, 0 signed, 1 unsigned, 0 failed") || !strings.Contains(text, warning) {
		t.Errorf("push, if-signed: %v\n%s", err, text)
	}
	text, err = run("push", enforced, "--dst-registry", site, "--plain-http")
	if err == nil || !strings.Contains(err.Error(), "do not verify with the archive's trust material") || !strings.Contains(err.Error(), "/example/app:v1 is unsigned") {
		t.Errorf("push, enforce: %v\n%s", err, text)
	}

	verifyArchiveSignatures(t, run)
}

// verifyArchiveSignatures is the second half of TestVerifyTrustMaterial:
// publish verify of the signatures an archive carries, per mode, offline.
func verifyArchiveSignatures(t *testing.T, run func(args ...string) (string, error)) {
	src := httptest.NewServer(ggcrregistry.New(ggcrregistry.WithReferrersSupport(true), ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(src.Close)
	host := strings.TrimPrefix(src.URL, "http://")
	vendor, foreign := testSigner(t), testSigner(t)
	var images []archive.Image
	for _, tc := range []struct {
		name string
		key  *sign.Key
	}{{"signed", vendor}, {"unsigned", nil}, {"foreign", foreign}} {
		ref := host + "/acme/" + tc.name + ":v1"
		img, _ := random.Image(256, 1)
		r, _ := name.ParseReference(ref)
		if err := remote.Write(r, img); err != nil {
			t.Fatal(err)
		}
		if tc.key != nil {
			desc, err := remote.Head(r)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tc.key.SignImage(t.Context(), r.Context(), *desc, true, nil); err != nil {
				t.Fatal(err)
			}
		}
		images = append(images, archive.Image{Ref: ref, Bundle: tc.name == "signed", Artifacts: []string{"acme"}})
	}
	// The bundle is the signed image; the others are its related images,
	// at lines 10 and 11.
	pm := archive.File{Path: "acme/1.0.0/manifest.yaml", Data: []byte(strings.ReplaceAll(`apiVersion: app.alauda.cn/v1beta1
kind: PackageManifest
metadata:
  name: acme.v1.0.0
spec:
  type: bundle
  artifact: HOST/acme/signed:v1
  version: 1.0.0
  relatedImages:
  - HOST/acme/unsigned:v1
  - HOST/acme/foreign:v1
  info:
    displayName: Acme
`, "HOST", host))}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "vendor.pub"), vendor.PublicKeyPEM(), 0o644)
	archives := map[string]string{}
	for _, mode := range []string{"enforce", "if-signed", "warn", "off"} {
		os.WriteFile(filepath.Join(dir, config.FileName), []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nverify:\n"+
			"- match: "+host+"/acme/*\n  mode: "+mode+"\n  key: vendor.pub\n"), 0o644)
		c, err := config.Load(filepath.Join(dir, config.FileName), true)
		if err != nil {
			t.Fatal(err)
		}
		trust, err := verify.TrustFiles(c)
		if err != nil {
			t.Fatal(err)
		}
		archives[mode] = filepath.Join(t.TempDir(), mode+".tgz")
		if _, err := archive.WriteFile(t.Context(), archives[mode], archive.PackageOptions{Images: images, Files: []archive.File{pm}, Trust: trust, Signatures: true}); err != nil {
			t.Fatal(err)
		}
	}
	src.Close() // offline: the signatures come from the archive alone

	// index.json lists the signatures beside the images: where an image's
	// entry is depends on the digests, not on the order given.
	foreignErr := "packages/acme/1.0.0/manifest.yaml:11: index.json manifests["
	foreignErr2 := "] (artifacts [acme]): " + host + "/acme/foreign:v1 is untrusted: expected signed with key keys/verify-L4.pub (publish.yaml:4 of the archive's trust material"
	unsignedErr := "packages/acme/1.0.0/manifest.yaml:10: index.json manifests["
	unsignedErr2 := "] (artifacts [acme]): " + host + "/acme/unsigned:v1 is unsigned"
	for _, tc := range []struct {
		mode, counts string
		fails, pass  []string // in the error; not in it
	}{
		{"enforce", "3 images, 1 signed, 1 unsigned, 1 failed", []string{foreignErr, foreignErr2, unsignedErr, unsignedErr2}, nil},
		{"if-signed", "3 images, 1 signed, 1 unsigned, 1 failed", []string{foreignErr, foreignErr2, "mode if-signed"}, []string{unsignedErr, unsignedErr2}},
		{"warn", "3 images, 1 signed, 1 unsigned, 1 failed", nil, nil},
		{"off", "", nil, nil}, // no rule in the trust material: nothing verified
	} {
		text, err := run("verify", archives[tc.mode])
		if strings.Contains(text, "images    verified with the archive's trust material: "+tc.counts) != (tc.counts != "") {
			t.Errorf("%s: counts:\n%s", tc.mode, text)
		}
		if tc.mode != "off" && !strings.Contains(text, "artifact  acme: 1 signed, 1 unsigned, 1 failed; unsigned: "+host+"/acme/unsigned:v1; failed: "+host+"/acme/foreign:v1") {
			t.Errorf("%s: per artifact:\n%s", tc.mode, text)
		}
		if tc.mode != "off" && !strings.Contains(text+fmt.Sprint(err), "index.json manifests[") {
			t.Errorf("%s: no index.json entry named:\n%s%v", tc.mode, text, err)
		}
		if len(tc.fails) == 0 {
			if err != nil || !strings.Contains(text, "verify ok") {
				t.Errorf("%s: %v\n%s", tc.mode, err, text)
			}
			if tc.mode == "warn" && (!strings.Contains(text, "warning: "+foreignErr) || !strings.Contains(text, foreignErr2)) {
				t.Errorf("warn: no warning for the foreign signature:\n%s", text)
			}
			continue
		}
		if err == nil {
			t.Fatalf("%s: verify passed:\n%s", tc.mode, text)
		}
		for _, want := range tc.fails {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q not in %v", tc.mode, want, err)
			}
		}
		for _, not := range tc.pass {
			if strings.Contains(err.Error(), not) {
				t.Errorf("%s: %q in %v", tc.mode, not, err)
			}
		}
		t.Logf("%s: %v", tc.mode, err)
	}

	// A signature whose blob the archive does not hold (a differential
	// archive's base has it) is no verdict: not unsigned, not untrusted.
	res, err := archive.Verify(archives["enforce"], archive.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := verify.FromTrust(res.Contents.Trust, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := v.VerifyArchive(host+"/acme/signed:v1", res.Contents); got.Status != "verified" {
		t.Errorf("signed, from the archive: %+v", got)
	}
	clear(res.Contents.SignatureBlobs)
	v, _ = verify.FromTrust(res.Contents.Trust, t.TempDir()) // a fresh cache
	if got := v.VerifyArchive(host+"/acme/signed:v1", res.Contents); got.Err == nil || !strings.Contains(got.Found, "is not in the archive") {
		t.Errorf("signed, its blobs gone: %+v", got)
	}
}

// testSigner is a fresh P-256 signing key (internal/sign, as --cosign-key
// loads it).
func testSigner(t *testing.T) *sign.Key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	key, err := sign.LoadKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil, "test key", "")
	if err != nil {
		t.Fatal(err)
	}
	return key
}
