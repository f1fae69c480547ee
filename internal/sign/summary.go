package sign

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/model"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// VerifierID is the verifier.id of publish's verification summaries.
const VerifierID = "https://github.com/operator-publish/publish"

// SummaryInputsAnnotation, on the referrer manifest of a verification
// summary, is the SHA-256 (hex) of what the summary says besides its
// time (summaryInputs): a run that would say the same finds it and
// writes none.
const SummaryInputsAnnotation = "io.operator-publish.summary.inputs"

// maxBundle bounds what is read of one bundle layer.
const maxBundle = 1 << 20

// vsaPredicate is the predicate of SLSA's Verification Summary v1
// (https://slsa.dev/spec/v1.0/verification_summary). in-toto/attestation's
// Go binding of it (predicates/vsa/v1) has no verifier.version, which
// the spec has; this struct follows the spec's field names.
type vsaPredicate struct {
	Verifier struct {
		ID      string            `json:"id"`
		Version map[string]string `json:"version,omitempty"`
	} `json:"verifier"`
	TimeVerified       string               `json:"timeVerified"`
	ResourceURI        string               `json:"resourceUri"`
	Policy             resourceDescriptor   `json:"policy"`
	InputAttestations  []resourceDescriptor `json:"inputAttestations,omitempty"`
	VerificationResult string               `json:"verificationResult"`
	VerifiedLevels     []string             `json:"verifiedLevels"`
}

// resourceDescriptor is an in-toto ResourceDescriptor with a URI and a
// digest.
type resourceDescriptor struct {
	URI    string            `json:"uri"`
	Digest map[string]string `json:"digest,omitempty"`
}

// summaryPredicate is the VSA predicate of s by publish version.
func summaryPredicate(s model.Summary, version string) vsaPredicate {
	var p vsaPredicate
	p.Verifier.ID = VerifierID
	p.Verifier.Version = map[string]string{"publish": version}
	p.TimeVerified = s.Time.UTC().Format(time.RFC3339)
	p.ResourceURI = s.ResourceURI
	p.Policy = resourceDescriptor{URI: s.PolicyURI}
	if s.PolicyDigest != "" {
		p.Policy.Digest = map[string]string{"sha256": s.PolicyDigest}
	}
	for _, in := range s.Inputs {
		rd := resourceDescriptor{URI: in}
		if _, d, ok := strings.Cut(in, "@"); ok {
			if alg, hx, ok := strings.Cut(d, ":"); ok {
				rd.Digest = map[string]string{alg: hx}
			}
		}
		p.InputAttestations = append(p.InputAttestations, rd)
	}
	p.VerificationResult = "FAILED"
	if s.Passed {
		p.VerificationResult = "PASSED"
	}
	p.VerifiedLevels = s.Levels
	return p
}

// summaryInputs is the SummaryInputsAnnotation of s by version: the
// SHA-256 of its predicate without the time.
func summaryInputs(s model.Summary, version string) string {
	p := summaryPredicate(s, version)
	p.TimeVerified = ""
	data, _ := json.Marshal(p)
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// Summarize attaches to repo@desc a verification summary: an in-toto
// statement with the SLSA Verification Summary v1 predicate saying s,
// verifier publish at version, signed with k as a DSSE Sigstore bundle
// referrer (the form of cosign attest; cosign verify-attestation --type
// https://slsa.dev/verification_summary/v1 --key reads it). When repo@desc
// already has a summary by k that says the same but for the time, it
// writes none and returns false. opts reach the registry.
func (k *Key) Summarize(ctx context.Context, repo name.Repository, desc v1.Descriptor, s model.Summary, version string, opts []remote.Option) (bool, error) {
	opts = append(append([]remote.Option(nil), opts...), remote.WithContext(ctx))
	inputs := summaryInputs(s, version)
	has, err := k.hasOwn(repo, desc.Digest, model.SummaryPredicateType, inputs, opts)
	if err != nil || has {
		return false, err
	}
	_, err = k.attach(ctx, repo, desc, model.SummaryPredicateType, summaryPredicate(s, version), map[string]string{SummaryInputsAnnotation: inputs}, opts)
	return err == nil, err
}

// Signed reports whether repo@desc has a signature by k (a Sigstore
// bundle referrer of cosign's signing predicate that verifies with k's
// public key). Errors: the registry's.
func (k *Key) Signed(ctx context.Context, repo name.Repository, desc v1.Descriptor, opts []remote.Option) (bool, error) {
	opts = append(append([]remote.Option(nil), opts...), remote.WithContext(ctx))
	return k.hasOwn(repo, desc.Digest, PredicateType, "", opts)
}

// hasOwn reports whether repo@d has a bundle referrer of predicateType
// (and, when inputs is not "", with that SummaryInputsAnnotation) that
// verifies with k's public key and binds d. A referrer that cannot be
// read or does not verify is not k's. Errors: listing the referrers.
func (k *Key) hasOwn(repo name.Repository, d v1.Hash, predicateType, inputs string, opts []remote.Option) (bool, error) {
	idx, err := remote.Referrers(repo.Digest(d.String()), append(opts, remote.WithFilter("artifactType", BundleArtifactType))...)
	if err != nil {
		return false, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return false, err
	}
	_, _, bv, err := KeyVerifier(k.pubPEM)
	if err != nil {
		return false, err
	}
	digest, _ := hex.DecodeString(d.Hex)
	for _, m := range im.Manifests {
		if m.Annotations[BundlePredicateTypeAnnotation] != predicateType || (inputs != "" && m.Annotations[SummaryInputsAnnotation] != inputs) {
			continue
		}
		b, err := readBundleLayer(repo, m.Digest, opts)
		if err != nil {
			continue
		}
		if _, err := bv.Verify(b, sgverify.NewPolicy(sgverify.WithArtifactDigest(d.Algorithm, digest), sgverify.WithKey())); err == nil {
			return true, nil
		}
	}
	return false, nil
}

// readBundleLayer reads the Sigstore bundle, the one layer of the
// referrer manifest dg of repo.
func readBundleLayer(repo name.Repository, dg v1.Hash, opts []remote.Option) (*sgbundle.Bundle, error) {
	img, err := remote.Image(repo.Digest(dg.String()), opts...)
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	if len(layers) != 1 {
		return nil, errors.New("not one bundle layer")
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxBundle))
	if err != nil {
		return nil, err
	}
	var b sgbundle.Bundle
	if err := b.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return &b, nil
}

// KeyVerifier loads a PEM public key: the key, its signature verifier
// (SHA-256 for ECDSA and RSA) and a sigstore-go verifier of bundles
// signed with it, offline: no transparency log, no timestamps (a key
// signature made offline has neither; the key has no validity period).
// Errors: the key does not parse, or cannot verify.
func KeyVerifier(keyPEM []byte) (crypto.PublicKey, signature.Verifier, *sgverify.Verifier, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(keyPEM)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("key does not parse: %w", err)
	}
	kv, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("key cannot verify signatures: %w", err)
	}
	tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return root.NewExpiringKey(kv, time.Time{}, time.Time{}), nil
	})
	bv, err := sgverify.NewVerifier(tm, sgverify.WithNoObserverTimestamps())
	if err != nil {
		return nil, nil, nil, err
	}
	return pub, kv, bv, nil
}
