package verify

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/digitorus/timestamp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/pipeline"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

const (
	testIssuer  = "https://issuer.example.com"
	testSubject = "release@example.com"
)

// virtualSigstore is sigstore-go's in-process test Sigstore (a Fulcio CA,
// a Rekor log and a timestamp authority) and its trusted root JSON, the
// file a keyless policy names. The root has no CT log: the virtual
// Fulcio embeds no SCT.
func virtualSigstore(t *testing.T) (*ca.VirtualSigstore, []byte) {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	// The virtual Rekor names its log by the hex text of its ID; a trusted
	// root file holds the raw key ID.
	logs := map[string]*root.TransparencyLog{}
	for id, l := range vs.RekorLogs() {
		c := *l
		if c.ID, err = hex.DecodeString(id); err != nil {
			t.Fatal(err)
		}
		logs[id] = &c
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), nil, vs.TimestampingAuthorities(), logs)
	if err != nil {
		t.Fatal(err)
	}
	data, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return vs, data
}

// signKeyless signs the manifest of repo:tag keylessly as subject (a
// Fulcio certificate, a Rekor entry, an RFC 3161 timestamp) and attaches
// the Sigstore bundle as a referrer.
func signKeyless(t *testing.T, vs *ca.VirtualSigstore, subject string, repo name.Repository, tag string, opts []remote.Option) {
	t.Helper()
	signKeylessAt(t, vs, subject, repo, tag, opts, time.Now().Add(5*time.Minute), true)
}

// signKeylessAt is signKeyless with the Rekor entry integrated at the
// time logged (the certificate is valid for ten minutes from now), and
// without the RFC 3161 timestamp when timestamped is false, so that the
// log's time is the only observer time.
func signKeylessAt(t *testing.T, vs *ca.VirtualSigstore, subject string, repo name.Repository, tag string, opts []remote.Option, logged time.Time, timestamped bool) {
	t.Helper()
	signKeylessStamped(t, vs, subject, repo, tag, opts, logged, func(sig []byte, virtual [][]byte) [][]byte {
		if timestamped {
			return virtual
		}
		return nil
	})
}

// signKeylessStamped is signKeylessAt whose bundle carries the RFC 3161
// timestamps stamp returns for the signature (virtual: the virtual
// Sigstore's own, stamped now).
func signKeylessStamped(t *testing.T, vs *ca.VirtualSigstore, subject string, repo name.Repository, tag string, opts []remote.Option, logged time.Time, stamp func(sig []byte, virtual [][]byte) [][]byte) {
	t.Helper()
	desc, err := remote.Get(repo.Tag(tag), opts...)
	if err != nil {
		t.Fatal(err)
	}
	e, err := vs.SignAtTime(subject, testIssuer, desc.Manifest, logged)
	if err != nil {
		t.Fatal(err)
	}
	vc, _ := e.VerificationContent()
	sc, _ := e.SignatureContent()
	entries, _ := e.TlogEntries()
	digest := sha256.Sum256(desc.Manifest)
	// The Rekor entry again, as a bundle carries it: the canonical
	// hashedrekord body and its signed entry timestamp (the TestEntity
	// keeps them unexported).
	certPEM, _ := cryptoutils.MarshalCertificateToPEM(vc.Certificate())
	body := fmt.Appendf(nil, `{"apiVersion":"0.0.1","kind":"hashedrekord","spec":{"data":{"hash":{"algorithm":"sha256","value":"%x"}},"signature":{"content":"%s","publicKey":{"content":"%s"}}}}`,
		digest[:], base64.StdEncoding.EncodeToString(sc.Signature()), base64.StdEncoding.EncodeToString(certPEM))
	logID, _ := vs.RekorLogID()
	logIDRaw, _ := hex.DecodeString(logID)
	integrated := entries[0].IntegratedTime().Unix()
	set, err := vs.RekorSignPayload(tlog.RekorPayload{Body: base64.StdEncoding.EncodeToString(body), IntegratedTime: integrated, LogIndex: 1000, LogID: logID})
	if err != nil {
		t.Fatal(err)
	}
	tles := []*protorekor.TransparencyLogEntry{{
		LogIndex:          1000,
		LogId:             &protocommon.LogId{KeyId: logIDRaw},
		KindVersion:       &protorekor.KindVersion{Kind: "hashedrekord", Version: "0.0.1"},
		IntegratedTime:    integrated,
		InclusionPromise:  &protorekor.InclusionPromise{SignedEntryTimestamp: set},
		CanonicalizedBody: body,
	}}
	tss, _ := e.Timestamps()
	var rfc []*protocommon.RFC3161SignedTimestamp
	for _, ts := range stamp(sc.Signature(), tss) {
		rfc = append(rfc, &protocommon.RFC3161SignedTimestamp{SignedTimestamp: ts})
	}
	pb := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle+json;version=0.1",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_X509CertificateChain{X509CertificateChain: &protocommon.X509CertificateChain{
				Certificates: []*protocommon.X509Certificate{{RawBytes: vc.Certificate().Raw}},
			}},
			TlogEntries:               tles,
			TimestampVerificationData: &protobundle.TimestampVerificationData{Rfc3161Timestamps: rfc},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: digest[:]},
			Signature:     sc.Signature(),
		}},
	}
	b, err := sgbundle.NewBundle(pb)
	if err != nil {
		t.Fatal(err)
	}
	data, err := b.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	attachBundleJSON(t, data, repo, desc.Digest, types.DockerManifestSchema2, opts)
}

// TestVerifyKeyless: an image signed keylessly by the in-process test
// Sigstore verifies offline against its trusted root when the identity
// matches; another subject is verify/identity with both identities named;
// a key entry does not accept a keyless signature.
func TestVerifyKeyless(t *testing.T) {
	r := inProcessRegistry(t)
	vs, trJSON := virtualSigstore(t)
	k := newTestKey(t)
	v, _ := loadPolicy(t, "verify:\n- match: "+r.host+"/exact/*\n  keyless: {issuer: "+testIssuer+", subject: "+testSubject+"}\n  trustedRoot: root.json\n"+
		"- match: "+r.host+"/regexp/*\n  keyless: {issuerRegexp: '^https://issuer\\.example\\.com$', subjectRegexp: '^release@example\\.(com|org)$'}\n  trustedRoot: root.json\n"+
		"- match: "+r.host+"/keyed/*\n  key: k.pub\n", map[string]string{"root.json": string(trJSON), "k.pub": k.pem})
	ctx := context.Background()
	for _, tc := range []struct {
		path, signer, want, found string
	}{
		{"exact/app", testSubject, model.VerifyVerified, "issuer " + testIssuer + ", subject " + testSubject},
		{"regexp/app", testSubject, model.VerifyVerified, "subject " + testSubject},
		{"exact/other", "mallory@example.com", model.VerifyIdentity, "signed by issuer " + testIssuer + ", subject mallory@example.com"},
		{"regexp/other", "release@example.net", model.VerifyIdentity, "subject release@example.net"},
		{"keyed/app", testSubject, model.VerifyUntrusted, "a keyless signature (issuer " + testIssuer + ", subject " + testSubject + "), the policy wants a key"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			repo, _ := name.NewRepository(r.host + "/" + tc.path)
			pushRandom(t, repo.Tag("v1").String(), nil)
			signKeyless(t, vs, tc.signer, repo, "v1", nil)
			got := v.Verify(ctx, repo.Tag("v1").String(), nil)
			if got.Status != tc.want || !strings.Contains(got.Found, tc.found) {
				t.Fatalf("got %+v, want %s with %q", got, tc.want, tc.found)
			}
			if tc.want == model.VerifyIdentity && !strings.Contains(got.Expected, "keyless issuer "+testIssuer) && !strings.Contains(got.Expected, "~^https") {
				t.Errorf("expected: %q", got.Expected)
			}
		})
	}
}

// TestVerifyKeylessValidity: a keyless signature whose certificate was not
// valid at the time the transparency log recorded it (logged two hours
// after its ten minutes ended, or an hour before they began), with no
// other observer time, is rejected as untrusted; the same signature
// logged inside the window verifies.
func TestVerifyKeylessValidity(t *testing.T) {
	r := inProcessRegistry(t)
	vs, trJSON := virtualSigstore(t)
	v, _ := loadPolicy(t, "verify:\n- match: "+r.host+"/**\n  keyless: {issuer: "+testIssuer+", subject: "+testSubject+"}\n  trustedRoot: root.json\n", map[string]string{"root.json": string(trJSON)})
	for _, tc := range []struct {
		name   string
		logged time.Duration
		want   string
	}{
		{"inside", 5 * time.Minute, model.VerifyVerified},
		{"after", 2 * time.Hour, model.VerifyUntrusted},
		{"before", -time.Hour, model.VerifyUntrusted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, _ := name.NewRepository(r.host + "/validity/" + tc.name)
			pushRandom(t, repo.Tag("v1").String(), nil)
			signKeylessAt(t, vs, testSubject, repo, "v1", nil, time.Now().Add(tc.logged), false)
			got := v.Verify(context.Background(), repo.Tag("v1").String(), nil)
			if got.Status != tc.want {
				t.Fatalf("got %+v, want %s", got, tc.want)
			}
			if tc.want == model.VerifyUntrusted && !strings.Contains(strings.ToLower(got.Found), "certificate") {
				t.Errorf("the reason does not name the certificate: %q", got.Found)
			}
			t.Logf("%s: %s", tc.name, got.Found)
		})
	}
}

// TestPipelineVerifyIdentity: through lint, a wrong keyless identity is a
// verify/identity error at the manifest line, naming the expected and
// the found identity.
func TestPipelineVerifyIdentity(t *testing.T) {
	f := newPublishFixture(t, inProcessRegistry(t))
	vs, trJSON := virtualSigstore(t)
	for img, who := range map[string]string{"bundle": testSubject, "manager": testSubject, "worker": "mallory@example.com"} {
		repo, _ := name.NewRepository(f.src.host + "/tiny/" + img)
		signKeyless(t, vs, who, repo, "v1.0.0", nil)
	}
	v, _ := loadPolicy(t, "verify:\n- match: "+f.src.host+"/tiny/*\n  keyless: {issuer: "+testIssuer+", subject: "+testSubject+"}\n  trustedRoot: root.json\n", map[string]string{"root.json": string(trJSON)})
	fs, err := pipeline.Lint(context.Background(), pipeline.LintOptions{Source: f.source, Mirror: f.options(v).Mirror, Verify: v})
	if err != nil {
		t.Fatal(err)
	}
	fd := finding(t, fs, pipeline.RuleVerifyIdentity)
	if fd.Severity != lint.Error || fd.Path != f.manifest || fd.Line != f.lines["worker"] ||
		!strings.Contains(fd.Message, "expected keyless issuer "+testIssuer+", subject "+testSubject) || !strings.Contains(fd.Message, "found signed by issuer "+testIssuer+", subject mallory@example.com") {
		t.Errorf("finding: %+v", fd)
	}
	for _, f := range fs {
		if strings.HasPrefix(f.Rule, "verify/") && f.Rule != pipeline.RuleVerifyIdentity {
			t.Errorf("unexpected: %s", f)
		}
	}
}

// signKeylessSigTag pushes a keyless cosign .sig tag for repo:tag signed
// by subject through the virtual Sigstore, as cosign (before bundles)
// writes it: the simple-signing payload as the layer, the signature, the
// certificate and its chain, and the Rekor entry with its signed entry
// timestamp as annotations.
func signKeylessSigTag(t *testing.T, vs *ca.VirtualSigstore, subject string, repo name.Repository, tag string, opts []remote.Option) {
	t.Helper()
	desc, err := remote.Get(repo.Tag(tag), opts...)
	if err != nil {
		t.Fatal(err)
	}
	payload := simpleSigningPayload(repo, desc.Digest)
	e, err := vs.Sign(subject, testIssuer, payload)
	if err != nil {
		t.Fatal(err)
	}
	vc, _ := e.VerificationContent()
	sc, _ := e.SignatureContent()
	entries, _ := e.TlogEntries()
	certPEM, _ := cryptoutils.MarshalCertificateToPEM(vc.Certificate())
	var chainPEM []byte
	fca := vs.FulcioCertificateAuthorities()[0].(*root.FulcioCertificateAuthority)
	for _, c := range append(append([]*x509.Certificate(nil), fca.Intermediates...), fca.Root) {
		p, _ := cryptoutils.MarshalCertificateToPEM(c)
		chainPEM = append(chainPEM, p...)
	}
	digest := sha256.Sum256(payload)
	body := fmt.Appendf(nil, `{"apiVersion":"0.0.1","kind":"hashedrekord","spec":{"data":{"hash":{"algorithm":"sha256","value":"%x"}},"signature":{"content":"%s","publicKey":{"content":"%s"}}}}`,
		digest[:], base64.StdEncoding.EncodeToString(sc.Signature()), base64.StdEncoding.EncodeToString(certPEM))
	logID, _ := vs.RekorLogID()
	integrated := entries[0].IntegratedTime().Unix()
	set, err := vs.RekorSignPayload(tlog.RekorPayload{Body: base64.StdEncoding.EncodeToString(body), IntegratedTime: integrated, LogIndex: 1000, LogID: logID})
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := json.Marshal(map[string]any{"SignedEntryTimestamp": set, "Payload": map[string]any{
		"body": base64.StdEncoding.EncodeToString(body), "integratedTime": integrated, "logIndex": 1000, "logID": logID,
	}})
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer: static.NewLayer(payload, SimpleSigningMediaType),
		Annotations: map[string]string{
			SignatureAnnotation:   base64.StdEncoding.EncodeToString(sc.Signature()),
			CertificateAnnotation: string(certPEM),
			ChainAnnotation:       string(chainPEM),
			RekorBundleAnnotation: string(rb),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag(desc.Digest.Algorithm+"-"+desc.Digest.Hex+".sig"), img, opts...); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyKeylessSigTag: a keyless signature in the legacy .sig tag form
// (certificate, chain and Rekor bundle annotations) verifies offline
// against the trusted root when the identity matches; another subject is
// verify/identity; a key entry does not accept it.
func TestVerifyKeylessSigTag(t *testing.T) {
	r := inProcessRegistry(t)
	vs, trJSON := virtualSigstore(t)
	k := newTestKey(t)
	v, _ := loadPolicy(t, "verify:\n- match: "+r.host+"/keyless/*\n  keyless: {issuer: "+testIssuer+", subject: "+testSubject+"}\n  trustedRoot: root.json\n"+
		"- match: "+r.host+"/keyed/*\n  key: k.pub\n", map[string]string{"root.json": string(trJSON), "k.pub": k.pem})
	for _, tc := range []struct {
		path, signer, want, found string
	}{
		{"keyless/app", testSubject, model.VerifyVerified, "issuer " + testIssuer + ", subject " + testSubject},
		{"keyless/other", "mallory@example.com", model.VerifyIdentity, "subject mallory@example.com"},
		{"keyed/app", testSubject, model.VerifyUntrusted, "a keyless signature, the policy wants a key"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			repo, _ := name.NewRepository(r.host + "/" + tc.path)
			pushRandom(t, repo.Tag("v1").String(), nil)
			signKeylessSigTag(t, vs, tc.signer, repo, "v1", nil)
			got := v.Verify(context.Background(), repo.Tag("v1").String(), nil)
			if got.Status != tc.want || !strings.Contains(got.Found, tc.found) {
				t.Fatalf("got %+v, want %s with %q", got, tc.want, tc.found)
			}
			if tc.want == model.VerifyVerified && got.Signature != "sig-tag" {
				t.Errorf("verified by %q, want the .sig tag", got.Signature)
			}
		})
	}
}

// testTSA is a timestamp authority of the test's own (a root, an
// intermediate and a leaf from sigstore-go's test CA helpers) that stamps
// at any time asked: the virtual Sigstore's stamps only now.
type testTSA struct {
	root, intermediate, leaf *x509.Certificate
	key                      *ecdsa.PrivateKey
}

// newTestTSA makes a TSA whose leaf is valid from an hour ago for three
// hours (its intermediate, from the helpers, for two hours from now), so
// that its chain verifies now and an hour from now.
func newTestTSA(t *testing.T) *testTSA {
	t.Helper()
	rootCert, rootKey, err := ca.GenerateRootCa()
	if err != nil {
		t.Fatal(err)
	}
	inter, interKey, err := ca.GenerateTSAIntermediate(rootCert, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	eku, _ := asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 8}}) // id-kp-timeStamping
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "test TSA"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(2 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// RFC 3161 section 2.3: the one extended key usage, critical.
		ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Critical: true, Value: eku}},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, inter, &key.PublicKey, interKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testTSA{root: rootCert, intermediate: inter, leaf: leaf, key: key}
}

// stampAt is an RFC 3161 timestamp response over sig at the time at, as a
// TSA answers (RFC 3161 section 2.4.2; digitorus/timestamp, which Sigstore's
// timestamp-authority uses).
func (a *testTSA) stampAt(t *testing.T, sig []byte, at time.Time) []byte {
	t.Helper()
	h := sha256.Sum256(sig)
	ts := timestamp.Timestamp{HashAlgorithm: crypto.SHA256, HashedMessage: h[:], Time: at, Policy: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 2}}
	resp, err := ts.CreateResponseWithOpts(a.leaf, a.key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestVerifyKeylessValidityTimestamp: the same rule at the timestamp
// authority's time. The signature is logged inside the certificate's ten
// minutes; an RFC 3161 timestamp from a TSA of the trusted root says it
// was made an hour later, when the certificate had expired: rejected as
// untrusted, naming the certificate. Stamped inside the window, by the
// same TSA, it verifies.
func TestVerifyKeylessValidityTimestamp(t *testing.T) {
	r := inProcessRegistry(t)
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tsa := newTestTSA(t)
	logs := map[string]*root.TransparencyLog{}
	for id, l := range vs.RekorLogs() {
		c := *l
		if c.ID, err = hex.DecodeString(id); err != nil {
			t.Fatal(err)
		}
		logs[id] = &c
	}
	tsas := vs.TimestampingAuthorities()
	tsas = append(tsas, &root.SigstoreTimestampingAuthority{Root: tsa.root, Intermediates: []*x509.Certificate{tsa.intermediate}, Leaf: tsa.leaf, ValidityPeriodStart: now.Add(-time.Hour), URI: "https://tsa.example.com"})
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), nil, tsas, logs)
	if err != nil {
		t.Fatal(err)
	}
	trJSON, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := loadPolicy(t, "verify:\n- match: "+r.host+"/**\n  keyless: {issuer: "+testIssuer+", subject: "+testSubject+"}\n  trustedRoot: root.json\n", map[string]string{"root.json": string(trJSON)})
	for _, tc := range []struct {
		name string
		by   *testTSA
		at   time.Duration
		want string
	}{
		{"inside", tsa, time.Minute, model.VerifyVerified},
		{"after", tsa, time.Hour, model.VerifyUntrusted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, _ := name.NewRepository(r.host + "/tsa/" + tc.name)
			pushRandom(t, repo.Tag("v1").String(), nil)
			signKeylessStamped(t, vs, testSubject, repo, "v1", nil, time.Now().Add(time.Minute), func(sig []byte, _ [][]byte) [][]byte {
				return [][]byte{tc.by.stampAt(t, sig, now.Add(tc.at))}
			})
			got := v.Verify(context.Background(), repo.Tag("v1").String(), nil)
			if got.Status != tc.want {
				t.Fatalf("got %+v, want %s", got, tc.want)
			}
			if tc.want == model.VerifyUntrusted && !strings.Contains(got.Found, "not when the timestamp authority stamped the signature") {
				t.Errorf("the reason does not say when the certificate was valid and when it was stamped: %q", got.Found)
			}
			t.Logf("%s: %s", tc.name, got.Found)
		})
	}
}
