package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/sign"
)

// TestCosignVerifiesSummary: a run with a verify policy (mode if-signed,
// the vendor's key), publish.yaml sign.images: true and --cosign-key
// (the site's key) leaves on each mirrored digest (the bundle, a related
// image signed by the vendor, and a related image index with its two
// children, unsigned) one verification summary and one signature by the
// site's key, on the Debian docker-registry (TLS, no referrers API: the
// referrers tag schema). The cosign CLI v3.1.3 verifies both with the
// site's public key (cosign verify-attestation --type
// https://slsa.dev/verification_summary/v1, cosign verify), refuses them
// with another key, and refuses a summary edited after signing. A rerun
// over the same images (--base before the manifest) adds none, and the
// vendor's signature is still listed beside them.
func TestCosignVerifiesSummary(t *testing.T) {
	cosignBin(t)
	const pass = "site pass"
	siteKey, sitePub := cosignKeyPair(t, pass)
	vendorKey, vendorPub := cosignKeyPair(t, "vendor")
	_, otherPub := cosignKeyPair(t, "other")

	e := newEnv(t)
	c := newCosignCLI(t, e)
	vpub, _ := os.ReadFile(vendorPub)
	cfg := fmt.Sprintf(`apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
verify:
- match: %s/tiny/**
  mode: if-signed
  key: |
%s
sign:
  images: true
`, e.src.Host, indent(string(vpub), "    "))
	if err := os.WriteFile(filepath.Join(e.source, "publish.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	e.commit("publish.yaml")
	base := e.head()

	e.pushTiny("1.0.0")
	// The manager becomes an image index of two children, unsigned.
	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	managerRef := e.src.Ref("tiny/manager:v1.0.0")
	if err := remote.WriteIndex(mustRef(t, managerRef), idx, e.src.Options()...); err != nil {
		t.Fatal(err)
	}
	// The worker, signed by the vendor (a Sigstore bundle referrer).
	workerRef := e.src.Ref("tiny/worker:v1.0.0")
	vkData, _ := os.ReadFile(vendorKey)
	vk, err := sign.LoadKey(vkData, []byte("vendor"), "vendor key", "test")
	if err != nil {
		t.Fatal(err)
	}
	wd, err := remote.Head(mustRef(t, workerRef), e.src.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vk.SignImage(context.Background(), mustRef(t, workerRef).Context(), *wd, false, e.src.Options()); err != nil {
		t.Fatal(err)
	}
	e.writeManifest("tiny", "1.0.0", e.src.Ref("tiny/bundle:v1.0.0"))
	e.commit("add tiny")

	t.Setenv("PUBLISH_COSIGN_KEY_PASSWORD", pass)
	out, errOut, code := e.publish("--cosign-key", siteKey)
	if code != 0 {
		t.Fatalf("publish run: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("publish run:\n%s", errOut)

	// Every mirrored digest: the bundle, the worker, the manager index
	// and its two children.
	byDigest := func(ref string) string {
		return strings.SplitN(ref, ":v", 2)[0] + "@" + e.digest(e.dst, ref)
	}
	manager := byDigest(e.dstRef(managerRef))
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	subjects := map[string]string{ // mirrored digest -> verifiedLevels
		byDigest(e.dstRef(e.src.Ref("tiny/bundle:v1.0.0"))): model.LevelUnsignedAccepted,
		byDigest(e.dstRef(workerRef)):                       model.LevelSignatureVerified,
		manager:                                             model.LevelUnsignedAccepted,
	}
	for _, m := range im.Manifests {
		subjects[strings.Split(manager, "@")[0]+"@"+m.Digest.String()] = model.LevelUnsignedAccepted
	}
	check := func(round string) {
		t.Helper()
		for ref, level := range subjects {
			pred := c.verifyAttestation(t, "", sitePub, ref)
			if pred["resourceUri"] != ref || pred["verificationResult"] != "PASSED" {
				t.Errorf("%s: summary of %s: resourceUri %v, verificationResult %v", round, ref, pred["resourceUri"], pred["verificationResult"])
			}
			if lv, _ := json.Marshal(pred["verifiedLevels"]); string(lv) != `["`+level+`"]` {
				t.Errorf("%s: summary of %s: verifiedLevels %s, want [%s]", round, ref, lv, level)
			}
			if p, _ := pred["policy"].(map[string]any); p["uri"] != "publish.yaml#L4" || p["digest"] == nil {
				t.Errorf("%s: summary of %s: policy %v, want uri publish.yaml#L4 and a digest", round, ref, pred["policy"])
			}
			if n := countReferrers(t, e, ref, model.SummaryPredicateType); n != 1 {
				t.Errorf("%s: %s has %d summaries, want 1", round, ref, n)
			}
			if n := countReferrers(t, e, ref, sign.PredicateType); n != 1 && !strings.Contains(ref, "worker") {
				t.Errorf("%s: %s has %d signatures, want 1 (the site's)", round, ref, n)
			}
			c.verify(t, "", sitePub, ref) // sign.images
		}
		// The worker keeps the vendor's signature, which its summary names.
		worker := byDigest(e.dstRef(workerRef))
		c.verify(t, "", vendorPub, worker)
		if n := countReferrers(t, e, worker, sign.PredicateType); n != 2 {
			t.Errorf("%s: the worker has %d signatures, want 2 (the vendor's, the site's)", round, n)
		}
		pred := c.verifyAttestation(t, "", sitePub, worker)
		if in, _ := pred["inputAttestations"].([]any); len(in) != 1 {
			t.Errorf("%s: the worker's summary names %d inputs, want 1 (the vendor's bundle): %v", round, len(in), pred["inputAttestations"])
		}
	}
	check("first run")
	c.verifyAttestation(t, cosignWrongBundle, otherPub, manager)

	// The same images again: no new summary, no new signature.
	out, errOut, code = e.publish("--cosign-key", siteKey, "--base", base.String())
	if code != 0 {
		t.Fatalf("publish run --base: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "sign: 0 verification summaries attached") || !strings.Contains(errOut, "sign: 0 mirrored digests signed") {
		t.Errorf("the rerun wrote summaries or signatures:\n%s", errOut)
	}
	check("rerun")

	// A summary edited after signing: the worker copied to another
	// repository with its summary's statement changed (PASSED for FAILED
	// would be the same length; the resource is renamed).
	worker := byDigest(e.dstRef(workerRef))
	edited := editedSummary(t, e, worker)
	c.verifyAttestation(t, "no matching attestations", sitePub, edited)
}

// verifyAttestation runs cosign verify-attestation --type (the summary's
// predicate type) --key pub --insecure-ignore-tlog=true ref: with refusal
// "" it must pass, and the predicate of the summary it prints is
// returned; otherwise it must fail with refusal in its output.
func (c *cosignCLI) verifyAttestation(t *testing.T, refusal, pub, ref string) map[string]any {
	t.Helper()
	args := []string{"verify-attestation", "--type", model.SummaryPredicateType, "--key", pub, "--insecure-ignore-tlog=true", ref}
	out, ok := c.run(t, args...)
	switch {
	case refusal == "" && !ok:
		t.Fatalf("cosign %s refuses it:\n%s", strings.Join(args, " "), out)
	case refusal != "" && ok:
		t.Fatalf("cosign %s accepts it:\n%s", strings.Join(args, " "), out)
	case refusal != "":
		if !strings.Contains(out, refusal) {
			t.Errorf("cosign %s refuses it, but not with %q:\n%s", strings.Join(args, " "), refusal, out)
		}
		return nil
	}
	for _, line := range strings.Split(out, "\n") {
		var env struct{ Payload string }
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &env) != nil || env.Payload == "" {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(env.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			PredicateType string         `json:"predicateType"`
			Predicate     map[string]any `json:"predicate"`
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		if st.PredicateType == model.SummaryPredicateType {
			return st.Predicate
		}
	}
	t.Fatalf("cosign %s printed no summary:\n%s", strings.Join(args, " "), out)
	return nil
}

// countReferrers counts the Sigstore bundle referrers of ref
// (REPOSITORY@DIGEST at the destination) whose predicate type annotation
// is predicateType.
func countReferrers(t *testing.T, e *env, ref, predicateType string) int {
	t.Helper()
	d, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Referrers(d, e.dst.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range im.Manifests {
		if m.Annotations[sign.BundlePredicateTypeAnnotation] == predicateType {
			n++
		}
	}
	return n
}

// editedSummary copies the image ref (REPOSITORY@DIGEST at the
// destination) to the repository edited/ with the bundle of its summary,
// whose statement is changed (resourceUri renamed, the signature kept),
// and returns the copy's REPOSITORY@DIGEST.
func editedSummary(t *testing.T, e *env, ref string) string {
	t.Helper()
	opts := e.dst.Options()
	d, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := name.NewRepository(e.dst.Host + "/edited/worker")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag("v1"), img, opts...); err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Referrers(d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	for _, m := range im.Manifests {
		if m.Annotations[sign.BundlePredicateTypeAnnotation] != model.SummaryPredicateType {
			continue
		}
		ri, err := remote.Image(d.Context().Digest(m.Digest.String()), opts...)
		if err != nil {
			t.Fatal(err)
		}
		ls, _ := ri.Layers()
		rc, _ := ls[0].Compressed()
		var buf bytes.Buffer
		buf.ReadFrom(rc)
		rc.Close()
		var b map[string]any
		if err := json.Unmarshal(buf.Bytes(), &b); err != nil {
			t.Fatal(err)
		}
		env := b["dsseEnvelope"].(map[string]any)
		payload, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
		changed := bytes.Replace(payload, []byte(`"resourceUri":"`), []byte(`"resourceUri":"edited.`), 1)
		if bytes.Equal(changed, payload) {
			t.Fatalf("no resourceUri in the summary: %s", payload)
		}
		env["payload"] = base64.StdEncoding.EncodeToString(changed)
		data, _ := json.Marshal(b)
		digest := pushBundleReferrer(t, e, repo, img, data)
		t.Logf("edited summary %s", digest)
		dg, _ := img.Digest()
		return repo.Name() + "@" + dg.String()
	}
	t.Fatalf("%s has no summary", ref)
	return ""
}

// pushBundleReferrer pushes data as a Sigstore bundle referrer of img in
// repo, in the layout cosign writes (empty config, one layer).
func pushBundleReferrer(t *testing.T, e *env, repo name.Repository, img v1.Image, data []byte) v1.Hash {
	t.Helper()
	opts := e.dst.Options()
	empty := []byte("{}")
	for _, b := range [][]byte{empty, data} {
		if err := remote.WriteLayer(repo, static.NewLayer(b, "application/octet-stream"), opts...); err != nil {
			t.Fatal(err)
		}
	}
	dg, _ := img.Digest()
	mt, _ := img.MediaType()
	size, _ := img.Size()
	desc := func(b []byte, mt types.MediaType) v1.Descriptor {
		h, n, _ := v1.SHA256(bytes.NewReader(b))
		return v1.Descriptor{MediaType: mt, Digest: h, Size: n}
	}
	m := v1.Manifest{
		SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: sign.BundleArtifactType,
		Config:      desc(empty, "application/vnd.oci.empty.v1+json"),
		Layers:      []v1.Descriptor{desc(data, sign.BundleArtifactType)},
		Subject:     &v1.Descriptor{MediaType: mt, Digest: dg, Size: size},
		Annotations: map[string]string{sign.BundlePredicateTypeAnnotation: model.SummaryPredicateType, "dev.sigstore.bundle.content": "dsse-envelope"},
	}
	raw, _ := json.Marshal(m)
	h, _, _ := v1.SHA256(bytes.NewReader(raw))
	if err := remote.Put(repo.Digest(h.String()), rawManifestOf{raw}, opts...); err != nil {
		t.Fatal(err)
	}
	return h
}

type rawManifestOf struct{ raw []byte }

func (r rawManifestOf) RawManifest() ([]byte, error) { return r.raw, nil }
func (r rawManifestOf) MediaType() (types.MediaType, error) {
	return types.OCIManifestSchema1, nil
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}
