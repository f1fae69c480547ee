package verify

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
)

// testKey is a cosign-style ECDSA P-256 key pair made at test time.
type testKey struct {
	priv *ecdsa.PrivateKey
	pem  string // PUBLIC KEY block
}

func newTestKey(t testing.TB) testKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{priv: k, pem: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))}
}

// pushRandom pushes a random single-platform image to ref and returns its
// digest.
func pushRandom(t testing.TB, ref string, opts []remote.Option) v1.Hash {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, opts...); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return d
}

// rawManifest is a Taggable of hand-written manifest bytes.
type rawManifest struct {
	data []byte
	mt   types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.data, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mt, nil }

// signBundle attaches a Sigstore bundle referrer to repo@subject: a message
// signature of the manifest (its digest is the image digest) with key k,
// in the layout of cosign's specs/BUNDLE_SPEC.md. The registry's referrers
// API lists it, or go-containerregistry updates the referrers tag.
func signBundle(t testing.TB, k testKey, repo name.Repository, subject v1.Hash, subjectMT types.MediaType, opts []remote.Option) {
	t.Helper()
	digest, _ := hex.DecodeString(subject.Hex)
	sig, err := ecdsa.SignASN1(rand.Reader, k.priv, digest)
	if err != nil {
		t.Fatal(err)
	}
	pb := &protobundle.Bundle{
		MediaType: BundleArtifactType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: ""}},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: digest},
			Signature:     sig,
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
	attachBundleJSON(t, data, repo, subject, subjectMT, opts)
}

// attachBundleJSON pushes data as a Sigstore bundle referrer of
// repo@subject.
func attachBundleJSON(t testing.TB, data []byte, repo name.Repository, subject v1.Hash, subjectMT types.MediaType, opts []remote.Option) {
	t.Helper()
	cfg := static.NewLayer([]byte("{}"), "application/vnd.oci.empty.v1+json")
	layer := static.NewLayer(data, BundleArtifactType)
	for _, l := range []v1.Layer{cfg, layer} {
		if err := remote.WriteLayer(repo, l, opts...); err != nil {
			t.Fatal(err)
		}
	}
	desc := func(l v1.Layer) map[string]any {
		d, _ := l.Digest()
		s, _ := l.Size()
		mt, _ := l.MediaType()
		return map[string]any{"mediaType": mt, "digest": d.String(), "size": s}
	}
	m := map[string]any{
		"schemaVersion": 2,
		"mediaType":     types.OCIManifestSchema1,
		"artifactType":  BundleArtifactType,
		"config":        desc(cfg),
		"layers":        []any{desc(layer)},
		"subject":       map[string]any{"mediaType": subjectMT, "digest": subject.String(), "size": 1},
		"annotations":   map[string]string{"dev.sigstore.bundle.content": "message-signature"},
	}
	raw, _ := json.Marshal(m)
	h, _, _ := v1.SHA256(bytes.NewReader(raw))
	if err := remote.Put(repo.Digest(h.String()), rawManifest{raw, types.OCIManifestSchema1}, opts...); err != nil {
		t.Fatal(err)
	}
}

// simpleSigningPayload is cosign's simple-signing payload for digest.
func simpleSigningPayload(repo name.Repository, digest v1.Hash) []byte {
	return fmt.Appendf(nil, `{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`, repo.Name(), digest.String())
}

// signSigTag pushes a legacy cosign signature tag sha256-<hex>.sig for
// repo@digest, signing payload (the simple-signing payload of signed when
// nil) with k.
func signSigTag(t testing.TB, k testKey, repo name.Repository, digest, signed v1.Hash, opts []remote.Option) {
	t.Helper()
	payload := simpleSigningPayload(repo, signed)
	h := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, k.priv, h[:])
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:       static.NewLayer(payload, SimpleSigningMediaType),
		Annotations: map[string]string{SignatureAnnotation: base64.StdEncoding.EncodeToString(sig)},
	})
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if err := remote.Write(repo.Tag(digest.Algorithm+"-"+digest.Hex+".sig"), img, opts...); err != nil {
		t.Fatal(err)
	}
}
