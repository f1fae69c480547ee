// Package sign signs what publish produces with a key (
// docs/signatures.md "Sign what goes out"): the OCI catalog artifact and
// the OLM catalog image in their registry, and the offline archive as a
// file beside it.
//
// Images are signed the way cosign v3 signs them, so that cosign, Flux's
// source-controller and publish's own verifier (internal/verify) accept
// the signature:
//
//   - a Sigstore bundle (bundle spec v0.3) holding a DSSE envelope of an
//     in-toto statement whose subject is the image digest, with cosign's
//     signing predicate type (https://sigstore.dev/cosign/sign/v1), stored
//     as an OCI referrer of the image (artifactType
//     application/vnd.dev.sigstore.bundle.v0.3+json; a registry without
//     the referrers API gets the referrers tag schema index);
//   - optionally the legacy cosign signature tag sha256-<hex>.sig with a
//     simple-signing payload, for verifiers that predate bundles.
//
// A file is signed as a Sigstore bundle with a message signature over its
// SHA-256 digest (the form of cosign sign-blob --bundle).
//
// A key signature made here has no transparency-log entry and no
// certificate: verifiers check it offline against the public key
// (cosign --insecure-ignore-tlog, as Flux does for keys).
package sign

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/operator-publish/publish/internal/model"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// Media types, annotations and types of the signatures written here
// (cosign's specs/BUNDLE_SPEC.md and SIGNATURE_SPEC.md, in-toto v1), and
// read by internal/verify.
const (
	// BundleArtifactType is the artifactType of a Sigstore bundle referrer
	// and the media type of its one layer.
	BundleArtifactType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// SimpleSigningMediaType is the layer media type of a cosign .sig tag.
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// SignatureAnnotation holds the base64 signature of a .sig layer.
	SignatureAnnotation = "dev.cosignproject.cosign/signature"
	// PredicateType is cosign's predicate for a plain image signature.
	PredicateType     = "https://sigstore.dev/cosign/sign/v1"
	InTotoPayloadType = "application/vnd.in-toto+json"
	// BundlePredicateTypeAnnotation, on a bundle referrer's manifest,
	// names the predicate type of the statement it signs (cosign's
	// pkg/oci/remote BundlePredicateType).
	BundlePredicateTypeAnnotation = "dev.sigstore.bundle.predicateType"
	emptyMediaType                = "application/vnd.oci.empty.v1+json"
	// BundleFileSuffix is appended to a file's name for its bundle:
	// FILE.tgz.sigstore.json.
	BundleFileSuffix = ".sigstore.json"
)

// Key is a private key to sign with, loaded by LoadKey.
type Key struct {
	signer  crypto.Signer
	details signature.AlgorithmDetails
	pubPEM  []byte
	hint    []byte
}

// LoadKey parses a PEM private key: PKCS #8 ("PRIVATE KEY"), SEC 1 ("EC
// PRIVATE KEY"), PKCS #1 ("RSA PRIVATE KEY"), or a key encrypted by
// cosign generate-key-pair ("ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED
// COSIGN PRIVATE KEY"), which needs passphrase. where names the key's
// origin (a file, a flag) and passWhere where its passphrase is given (a
// flag, an environment variable) in errors, which never contain the key
// or the passphrase. ECDSA (P-256, P-384, P-521), RSA (2048 bits
// and more) and Ed25519 keys are accepted.
func LoadKey(data, passphrase []byte, where, passWhere string) (*Key, error) {
	if !bytes.Contains(data, []byte("-----BEGIN ")) {
		return nil, fmt.Errorf("%s: not a PEM private key (want -----BEGIN PRIVATE KEY----- or cosign's ENCRYPTED SIGSTORE PRIVATE KEY)", where)
	}
	encrypted := bytes.Contains(data, []byte("ENCRYPTED"))
	if encrypted && len(passphrase) == 0 {
		return nil, fmt.Errorf("%s: the key is encrypted: give its passphrase (%s)", where, passWhere)
	}
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(data, func(bool) ([]byte, error) { return passphrase, nil })
	if err != nil {
		if encrypted {
			return nil, fmt.Errorf("%s: the key does not decrypt with the passphrase given (%s), or is damaged", where, passWhere)
		}
		return nil, fmt.Errorf("%s: the private key does not parse: %s", where, firstLine(err))
	}
	s, ok := priv.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: a %T cannot sign", where, priv)
	}
	details, err := signature.GetDefaultAlgorithmDetails(s.Public())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	pubPEM, err := cryptoutils.MarshalPublicKeyToPEM(s.Public())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	der, err := cryptoutils.MarshalPublicKeyToDER(s.Public())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	h := sha256.Sum256(der)
	return &Key{signer: s, details: details, pubPEM: pubPEM, hint: []byte(base64.StdEncoding.EncodeToString(h[:]))}, nil
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// PublicKeyPEM is the PEM public key of k ("PUBLIC KEY", PKIX), the file a
// verifier needs (cosign.pub, a Flux verify secret, publish.yaml verify).
func (k *Key) PublicKeyPEM() []byte { return append([]byte(nil), k.pubPEM...) }

// keypair adapts Key to sigstore-go's sign.Keypair.
type keypair struct{ k *Key }

func (p keypair) GetHashAlgorithm() protocommon.HashAlgorithm { return p.k.details.GetProtoHashType() }
func (p keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return p.k.details.GetSignatureAlgorithm()
}
func (p keypair) GetHint() []byte { return p.k.hint }
func (p keypair) GetKeyAlgorithm() string {
	switch p.k.details.GetKeyType() {
	case signature.ECDSA:
		return "ECDSA"
	case signature.RSA:
		return "RSA"
	case signature.ED25519:
		return "ED25519"
	}
	return ""
}
func (p keypair) GetPublicKey() crypto.PublicKey   { return p.k.signer.Public() }
func (p keypair) GetPublicKeyPem() (string, error) { return string(p.k.pubPEM), nil }

// SignData signs data: its digest for ECDSA and RSA, the data itself for
// Ed25519 (which hashes while signing). It returns the signature and what
// was signed.
func (p keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	hf := p.k.details.GetHashType()
	toSign := data
	if hf != crypto.Hash(0) {
		h := hf.New()
		h.Write(data)
		toSign = h.Sum(nil)
	}
	sig, err := p.k.signer.Sign(rand.Reader, toSign, hf)
	return sig, toSign, err
}

// digestContent is sigstore-go sign.Content for a message whose SHA-256
// digest is all that is known (a file too large to hold): its
// pre-authentication encoding is the digest, which SignData signs as it
// is (the key's hash is SHA-256, checked by SignDigest).
type digestContent struct{ digest []byte }

func (d digestContent) PreAuthEncoding() []byte { return d.digest }
func (d digestContent) Bundle(b *protobundle.Bundle, sig, _ []byte, alg protocommon.HashAlgorithm) {
	b.Content = &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
		MessageDigest: &protocommon.HashOutput{Algorithm: alg, Digest: d.digest},
		Signature:     sig,
	}}
}

// prehashed signs an already computed digest.
type prehashed struct{ keypair }

func (p prehashed) SignData(_ context.Context, digest []byte) ([]byte, []byte, error) {
	sig, err := p.k.signer.Sign(rand.Reader, digest, p.k.details.GetHashType())
	return sig, digest, err
}

// SignDigest returns the Sigstore bundle (JSON) of a message signature
// over a SHA-256 digest (32 bytes): the bundle of a file, as cosign
// sign-blob --bundle writes it. Ed25519 keys cannot sign a digest: an
// error says to use an ECDSA or RSA key.
func (k *Key) SignDigest(digest []byte) ([]byte, error) {
	if len(digest) != sha256.Size {
		return nil, fmt.Errorf("a SHA-256 digest has 32 bytes, not %d", len(digest))
	}
	if k.details.GetHashType() != crypto.SHA256 {
		return nil, errors.New("signing a file needs an ECDSA P-256 or RSA key (its digest is SHA-256); this key hashes otherwise")
	}
	pb, err := sgsign.Bundle(digestContent{digest}, prehashed{keypair{k}}, sgsign.BundleOptions{})
	if err != nil {
		return nil, err
	}
	return marshalBundle(pb)
}

func marshalBundle(pb *protobundle.Bundle) ([]byte, error) {
	b, err := sgbundle.NewBundle(pb)
	if err != nil {
		return nil, err
	}
	return b.MarshalJSON()
}

// ImageSignature says what SignImage wrote.
type ImageSignature struct {
	// Referrer is the digest of the bundle's referrer manifest.
	Referrer v1.Hash
	// SigTag is the .sig tag written ("" without one).
	SigTag string
}

// SignImage signs the manifest desc (digest, media type, size) of repo:
// a DSSE Sigstore bundle pushed as its referrer and, with sigTag, the
// legacy sha256-<hex>.sig tag. opts reach the registry (credentials,
// transport). A second signature of the same image adds a referrer (and
// replaces the .sig tag's manifest, which holds one signature).
func (k *Key) SignImage(ctx context.Context, repo name.Repository, desc v1.Descriptor, sigTag bool, opts []remote.Option) (*ImageSignature, error) {
	opts = append(append([]remote.Option(nil), opts...), remote.WithContext(ctx))
	ref, err := k.attach(ctx, repo, desc, PredicateType, map[string]any{}, nil, opts)
	if err != nil {
		return nil, err
	}
	out := &ImageSignature{Referrer: ref}
	if sigTag {
		tag := repo.Tag(desc.Digest.Algorithm + "-" + desc.Digest.Hex + ".sig")
		if err := k.pushSigTag(tag, repo, desc.Digest, opts); err != nil {
			return nil, fmt.Errorf("pushing the signature tag %s: %w", tag, err)
		}
		out.SigTag = tag.TagStr()
	}
	return out, nil
}

// attach signs an in-toto statement (in-toto attestation v1) whose
// subject is repo@desc, with predicateType and predicate (a value that
// marshals to a JSON object), as a DSSE Sigstore bundle, and pushes it as
// a referrer of desc with the annotations extra besides cosign's. It
// returns the referrer manifest's digest. opts carry the context.
func (k *Key) attach(ctx context.Context, repo name.Repository, desc v1.Descriptor, predicateType string, predicate any, extra map[string]string, opts []remote.Option) (v1.Hash, error) {
	stmt, err := statement(repo, desc.Digest, predicateType, predicate)
	if err != nil {
		return v1.Hash{}, err
	}
	pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: stmt, PayloadType: InTotoPayloadType}, keypair{k}, sgsign.BundleOptions{Context: ctx})
	if err != nil {
		return v1.Hash{}, fmt.Errorf("signing %s@%s: %w", repo, desc.Digest, err)
	}
	data, err := marshalBundle(pb)
	if err != nil {
		return v1.Hash{}, err
	}
	ref, err := pushReferrer(repo, desc, data, predicateType, extra, opts)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("pushing the signature of %s@%s: %w", repo, desc.Digest, err)
	}
	return ref, nil
}

// statement is the JSON of an in-toto statement v1 (in-toto/attestation's
// Statement, checked by its Validate) about repo@digest.
func statement(repo name.Repository, digest v1.Hash, predicateType string, predicate any) ([]byte, error) {
	raw, err := json.Marshal(predicate)
	if err != nil {
		return nil, err
	}
	var pred structpb.Struct
	if err := protojson.Unmarshal(raw, &pred); err != nil {
		return nil, fmt.Errorf("the predicate is no JSON object: %w", err)
	}
	st := &intoto.Statement{
		Type:          intoto.StatementTypeUri,
		Subject:       []*intoto.ResourceDescriptor{{Name: repo.Name(), Digest: map[string]string{digest.Algorithm: digest.Hex}}},
		PredicateType: predicateType,
		Predicate:     &pred,
	}
	if err := st.Validate(); err != nil {
		return nil, err
	}
	return protojson.Marshal(st)
}

// pushReferrer pushes data (a Sigstore bundle) as an OCI referrer of
// repo@subject: an image manifest with the empty config, the bundle as
// its one layer, artifactType and subject set, cosign's annotations
// (the content, the predicate type) and extra.
func pushReferrer(repo name.Repository, subject v1.Descriptor, data []byte, predicateType string, extra map[string]string, opts []remote.Option) (v1.Hash, error) {
	cfg := static.NewLayer([]byte("{}"), emptyMediaType)
	layer := static.NewLayer(data, BundleArtifactType)
	for _, l := range []v1.Layer{cfg, layer} {
		if err := remote.WriteLayer(repo, l, opts...); err != nil {
			return v1.Hash{}, err
		}
	}
	desc := func(l v1.Layer) v1.Descriptor {
		d, _ := l.Digest()
		s, _ := l.Size()
		mt, _ := l.MediaType()
		return v1.Descriptor{MediaType: mt, Digest: d, Size: s}
	}
	ann := map[string]string{
		"dev.sigstore.bundle.content": "dsse-envelope",
		BundlePredicateTypeAnnotation: predicateType,
	}
	for k, v := range extra {
		ann[k] = v
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  BundleArtifactType,
		Config:        desc(cfg),
		Layers:        []v1.Descriptor{desc(layer)},
		Subject:       &v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
		Annotations:   ann,
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return v1.Hash{}, err
	}
	h, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return v1.Hash{}, err
	}
	return h, remote.Put(repo.Digest(h.String()), rawManifest{raw, types.OCIManifestSchema1}, opts...)
}

// pushSigTag pushes the legacy cosign signature of repo@digest at tag: one
// layer, the simple-signing payload, its signature in an annotation.
func (k *Key) pushSigTag(tag name.Tag, repo name.Repository, digest v1.Hash, opts []remote.Option) error {
	payload := fmt.Appendf(nil, `{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`, repo.Name(), digest.String())
	sig, _, err := keypair{k}.SignData(context.Background(), payload)
	if err != nil {
		return err
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:       static.NewLayer(payload, SimpleSigningMediaType),
		Annotations: map[string]string{SignatureAnnotation: base64.StdEncoding.EncodeToString(sig)},
	})
	if err != nil {
		return err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	return remote.Write(tag, img, opts...)
}

// rawManifest is a manifest to PUT as it is (remote.Taggable).
type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mt, nil }

// ImageSigner signs images with Key for the pipeline (its ImageSigner
// interface): a bundle referrer, and with SigTag the .sig tag too.
type ImageSigner struct {
	Key    *Key
	SigTag bool
	// Version is publish's version, the verifier's version in the
	// verification summaries (Summarize).
	Version string
}

// Sign signs repo@desc (SignImage) and says what it wrote.
func (s ImageSigner) Sign(ctx context.Context, repo name.Repository, desc v1.Descriptor, opts []remote.Option) (string, error) {
	sig, err := s.Key.SignImage(ctx, repo, desc, s.SigTag, opts)
	if err != nil {
		return "", err
	}
	what := "Sigstore bundle referrer " + sig.Referrer.String()
	if sig.SigTag != "" {
		what += ", tag " + sig.SigTag
	}
	return what, nil
}

// SignReferrer signs repo@desc with a Sigstore bundle referrer only,
// never the .sig tag, whatever SigTag says: a mirrored image's .sig tag
// holds the vendor's signature, which a tag of ours would replace.
func (s ImageSigner) SignReferrer(ctx context.Context, repo name.Repository, desc v1.Descriptor, opts []remote.Option) (string, error) {
	sig, err := s.Key.SignImage(ctx, repo, desc, false, opts)
	if err != nil {
		return "", err
	}
	return "Sigstore bundle referrer " + sig.Referrer.String(), nil
}

// Signed reports whether repo@desc has a signature by s.Key (Key.Signed).
func (s ImageSigner) Signed(ctx context.Context, repo name.Repository, desc v1.Descriptor, opts []remote.Option) (bool, error) {
	return s.Key.Signed(ctx, repo, desc, opts)
}

// Summarize attaches the verification summary sum of repo@desc, by
// publish at s.Version (Key.Summarize); false when an equal one is there.
func (s ImageSigner) Summarize(ctx context.Context, repo name.Repository, desc v1.Descriptor, sum model.Summary, opts []remote.Option) (bool, error) {
	return s.Key.Summarize(ctx, repo, desc, sum, s.Version, opts)
}
