package verify

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/sign"
	"github.com/operator-publish/publish/internal/testenv"
)

// summaryAt returns the predicate of the one verification summary of d
// (a Sigstore bundle referrer), decoded from its DSSE envelope.
func summaryAt(t *testing.T, d name.Digest, opts []remote.Option) map[string]any {
	t.Helper()
	for _, dg := range referrers(t, d, opts) {
		ref := d.Context().Digest(dg)
		m, err := remote.Get(ref, opts...)
		if err != nil {
			t.Fatal(err)
		}
		var mf struct{ Annotations map[string]string }
		json.Unmarshal(m.Manifest, &mf)
		if mf.Annotations[sign.BundlePredicateTypeAnnotation] != model.SummaryPredicateType {
			continue
		}
		img, err := remote.Image(ref, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ls, _ := img.Layers()
		rc, err := ls[0].Compressed()
		if err != nil {
			t.Fatal(err)
		}
		var b struct {
			DSSEEnvelope struct{ Payload []byte } `json:"dsseEnvelope"`
		}
		if err := json.NewDecoder(rc).Decode(&b); err != nil {
			t.Fatal(err)
		}
		rc.Close()
		var st struct{ Predicate map[string]any }
		if err := json.Unmarshal(b.DSSEEnvelope.Payload, &st); err != nil {
			t.Fatal(err)
		}
		return st.Predicate
	}
	t.Fatalf("%s has no summary", d)
	return nil
}

// TestArchiveCarriesTrust: publish package puts the verify policy's
// trust material in the archive (trust/policy.json, the key, the
// keyless rule's trusted root); publish verify on a copy elsewhere reads
// it without any registry or Sigstore service, and warns for the trusted
// root whose CA certificate expires within the window (10 days from now,
// inside the default 30), not with a window that ends before; publish push
// verifies every image it put at the site with that policy, offline, on
// Debian's docker-registry (TLS, the referrers tag schema).
func TestArchiveCarriesTrust(t *testing.T) {
	f := newPublishFixture(t, debianRegistry(t))
	for _, img := range []string{"bundle", "manager", "worker"} {
		f.sign(t, img)
	}
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	p := filepath.Join(f.source, config.FileName)
	os.WriteFile(filepath.Join(f.source, "root.json"), testenv.ExpiringTrustedRoot(t, now.AddDate(0, 0, 10)), 0o644)
	os.WriteFile(p, []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nverify:\n"+
		"- match: "+f.src.host+"/tiny/*\n  key: vendor.pub\n"+
		"- match: other.example.com/**\n  mode: warn\n  keyless: {issuer: https://issuer.example.com, subject: release@example.com}\n  trustedRoot: root.json\n"), 0o644)
	c, err := config.Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	v, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	trust, err := TrustFiles(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "ops.tgz")
	if _, err := pipeline.Package(ctx, pipeline.PackageOptions{Source: f.source, Mirror: f.options(v).Mirror, Output: out, Verify: v, Trust: trust}); err != nil {
		t.Fatal(err)
	}

	// The far side: a copy of the archive alone.
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.tgz")
	if err := os.WriteFile(cp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	vr, err := archive.Verify(cp, archive.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range vr.Contents.Trust {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, " ") != "keys/verify-L4.pub policy.json roots/verify-L6.json" {
		t.Errorf("trust material in the archive: %v", paths)
	}
	rep, err := CheckTrust(vr.Contents.Trust, now, now.AddDate(0, 0, 30))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rules != 2 || rep.Keys != 1 || rep.Roots != 1 || len(rep.Expiring) != 1 || !strings.Contains(rep.Expiring[0], "trust/roots/verify-L6.json: Fulcio CA root certificate \"CN=test fulcio\" expires 2026-12-14T12:00:00Z") {
		t.Errorf("CheckTrust, 30 days: %+v", rep)
	}
	if rep, err := CheckTrust(vr.Contents.Trust, now, now.AddDate(0, 0, 5)); err != nil || len(rep.Expiring) != 0 {
		t.Errorf("CheckTrust, 5 days: %+v, %v", rep, err)
	}

	// push verifies at the site with the archive's policy.
	site := f.siteRegistry(t, "docker-registry")
	var log bytes.Buffer
	o := pipeline.PushOptions{Archive: cp, TempDir: t.TempDir(), Mirror: site.mirror, Options: pipeline.Options{Log: slog.New(slog.NewTextHandler(&log, nil))},
		Trust: func(files []archive.File) (pipeline.ImageVerifier, []string, error) {
			rep, err := CheckTrust(files, now, now.AddDate(0, 0, 30))
			if err != nil {
				return nil, nil, err
			}
			v, err := FromTrust(files, t.TempDir())
			return v, rep.Expiring, err
		}}
	if _, err := pipeline.Push(ctx, o); err != nil {
		t.Fatalf("push: %v\n%s", err, log.String())
	}
	for _, want := range []string{"push: verify with the archive's trust material: 3 images, 3 signed, 0 unsigned, 0 failed", "expires 2026-12-14T12:00:00Z"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("push log lacks %q:\n%s", want, log.String())
		}
	}

	// With the site's key and sign.images: a summary and a signature of
	// the site's key on each image pushed, once.
	der, err := x509.MarshalPKCS8PrivateKey(newTestKey(t).priv)
	if err != nil {
		t.Fatal(err)
	}
	k, err := sign.LoadKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil, "site key", "")
	if err != nil {
		t.Fatal(err)
	}
	o.Options.Sign, o.Options.SignImages = sign.ImageSigner{Key: k, Version: "test"}, true
	o.Options.Now = func() time.Time { return now }
	for round, want := range []string{"sign: 3 mirrored digests signed", "sign: 0 mirrored digests signed"} {
		log.Reset()
		pr, err := pipeline.Push(ctx, o)
		if err != nil {
			t.Fatalf("push %d: %v\n%s", round, err, log.String())
		}
		summaries := strings.Replace(want, "mirrored digests signed", "verification summaries attached", 1)
		if !strings.Contains(log.String(), want) || !strings.Contains(log.String(), summaries) {
			t.Errorf("push %d: want %q and %q:\n%s", round, want, summaries, log.String())
		}
		for _, im := range pr.Push.Images {
			ref, err := name.ParseReference(im.Destination)
			if err != nil {
				t.Fatal(err)
			}
			d := ref.Context().Digest(im.Digest)
			n := map[string]int{}
			for _, dg := range referrers(t, d, site.opts) {
				m, err := remote.Get(d.Context().Digest(dg), site.opts...)
				if err != nil {
					t.Fatal(err)
				}
				var mf struct{ Annotations map[string]string }
				json.Unmarshal(m.Manifest, &mf)
				n[mf.Annotations[sign.BundlePredicateTypeAnnotation]]++
			}
			if n[model.SummaryPredicateType] != 1 {
				t.Errorf("push %d: %s has %d summaries, want 1", round, d, n[model.SummaryPredicateType])
			}
			// What it says: the connected side's rule and its digest, the
			// injected time, the digest at the site.
			pred := summaryAt(t, d, site.opts)
			pol, _ := pred["policy"].(map[string]any)
			dg, _ := pol["digest"].(map[string]any)
			if pol["uri"] != "publish.yaml#L4" || dg["sha256"] != ruleDigest(c.Verify[0]) || pred["timeVerified"] != "2026-12-04T12:00:00Z" ||
				pred["resourceUri"] != d.String() || pred["verificationResult"] != "PASSED" {
				t.Errorf("push %d: the summary of %s: %v", round, d, pred)
			}
		}
	}
}

// TestSummaryIsNoSignature: an image whose only referrer is a
// verification summary signed with the policy's key is unsigned (no
// signature at all), on go-containerregistry's registry: a summary says
// what a verifier concluded, it does not sign the image.
func TestSummaryIsNoSignature(t *testing.T) {
	r := inProcessRegistry(t)
	key := newTestKey(t)
	der, err := x509.MarshalPKCS8PrivateKey(key.priv)
	if err != nil {
		t.Fatal(err)
	}
	k, err := sign.LoadKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil, "key", "")
	if err != nil {
		t.Fatal(err)
	}
	ref := r.host + "/app/img:v1"
	pushRandom(t, ref, r.opts)
	n, _ := name.ParseReference(ref)
	desc, err := remote.Get(n, r.opts...)
	if err != nil {
		t.Fatal(err)
	}
	s := model.Summary{ResourceURI: n.Context().Digest(desc.Digest.String()).String(), PolicyURI: "publish.yaml#L4", Passed: true, Levels: []string{model.LevelUnsignedAccepted}, Time: time.Now()}
	if wrote, err := k.Summarize(context.Background(), n.Context(), desc.Descriptor, s, "test", r.opts); err != nil || !wrote {
		t.Fatalf("Summarize: %v, %v", wrote, err)
	}
	v, _ := loadPolicy(t, "verify:\n- match: "+r.host+"/app/*\n  mode: if-signed\n  key: vendor.pub\n", map[string]string{"vendor.pub": key.pem})
	got := v.Verify(context.Background(), ref, r.opts)
	if got.Status != model.VerifyUnsigned || !got.NoSignature {
		t.Errorf("an image with only a summary: %+v", got)
	}
}
