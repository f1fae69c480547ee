package main

import (
	"bytes"
	"crypto/elliptic"
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
// the push under enforce.
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
}
