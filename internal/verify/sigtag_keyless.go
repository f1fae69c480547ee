package verify

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Annotations of a keyless cosign .sig layer (cosign's
// specs/SIGNATURE_SPEC.md), besides SignatureAnnotation and
// CertificateAnnotation.
const (
	// ChainAnnotation holds the PEM chain of the certificate (intermediates
	// and root).
	ChainAnnotation = "dev.sigstore.cosign/chain"
	// RekorBundleAnnotation holds the Rekor entry and its signed entry
	// timestamp: {"SignedEntryTimestamp", "Payload": {"body",
	// "integratedTime", "logIndex", "logID"}}.
	RekorBundleAnnotation = "dev.sigstore.cosign/bundle"
	// TimestampAnnotation holds an RFC 3161 timestamp of the signature:
	// {"SignedRFC3161Timestamp"}.
	TimestampAnnotation = "dev.sigstore.cosign/rfc3161timestamp"
)

// rekorBundle is the value of RekorBundleAnnotation.
type rekorBundle struct {
	SignedEntryTimestamp []byte
	Payload              struct {
		Body           string `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogIndex       int64  `json:"logIndex"`
		LogID          string `json:"logID"`
	}
}

// sigTagBundle turns a keyless .sig layer (its annotations, the signed
// payload and the signature) into the Sigstore bundle (v0.1) it amounts
// to: the certificate chain, the Rekor entry with its inclusion promise,
// the timestamp if any, and a message signature over the payload. Errors
// say which annotation is missing or damaged.
func sigTagBundle(ann map[string]string, payload, sig []byte) (*sgbundle.Bundle, error) {
	var chain []*protocommon.X509Certificate
	for _, a := range []string{CertificateAnnotation, ChainAnnotation} {
		certs, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(ann[a]))
		if err != nil {
			return nil, fmt.Errorf("%s does not parse: %w", a, err)
		}
		for _, c := range certs {
			chain = append(chain, &protocommon.X509Certificate{RawBytes: c.Raw})
		}
	}
	if len(chain) == 0 {
		return nil, errors.New("no certificate")
	}
	vm := &protobundle.VerificationMaterial{
		Content: &protobundle.VerificationMaterial_X509CertificateChain{X509CertificateChain: &protocommon.X509CertificateChain{Certificates: chain[:1]}},
	}
	if raw, ok := ann[RekorBundleAnnotation]; ok {
		var rb rekorBundle
		if err := json.Unmarshal([]byte(raw), &rb); err != nil {
			return nil, fmt.Errorf("%s does not parse: %w", RekorBundleAnnotation, err)
		}
		body, err := base64.StdEncoding.DecodeString(rb.Payload.Body)
		if err != nil {
			return nil, fmt.Errorf("%s: the entry body is not base64", RekorBundleAnnotation)
		}
		var kind struct{ Kind, APIVersion string }
		if err := json.Unmarshal(body, &kind); err != nil {
			return nil, fmt.Errorf("%s: the entry body is not a Rekor entry", RekorBundleAnnotation)
		}
		logID, err := hex.DecodeString(rb.Payload.LogID)
		if err != nil {
			return nil, fmt.Errorf("%s: the log ID is not hex", RekorBundleAnnotation)
		}
		vm.TlogEntries = []*protorekor.TransparencyLogEntry{{
			LogIndex:          rb.Payload.LogIndex,
			LogId:             &protocommon.LogId{KeyId: logID},
			KindVersion:       &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion},
			IntegratedTime:    rb.Payload.IntegratedTime,
			InclusionPromise:  &protorekor.InclusionPromise{SignedEntryTimestamp: rb.SignedEntryTimestamp},
			CanonicalizedBody: body,
		}}
	}
	if raw, ok := ann[TimestampAnnotation]; ok {
		var ts struct{ SignedRFC3161Timestamp []byte }
		if err := json.Unmarshal([]byte(raw), &ts); err != nil {
			return nil, fmt.Errorf("%s does not parse: %w", TimestampAnnotation, err)
		}
		vm.TimestampVerificationData = &protobundle.TimestampVerificationData{Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: ts.SignedRFC3161Timestamp}}}
	}
	digest := sha256Sum(payload)
	return sgbundle.NewBundle(&protobundle.Bundle{
		MediaType:            "application/vnd.dev.sigstore.bundle+json;version=0.1",
		VerificationMaterial: vm,
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: digest},
			Signature:     sig,
		}},
	})
}

// verifyKeylessSigTag verifies one keyless .sig layer against the
// entry's trusted root and identity: the certificate chain, the signature
// over the payload, the Rekor entry or timestamp as the time of signing.
// The payload's digest check is the caller's. found and idErr are as for
// verifyBundle.
func (e *entry) verifyKeylessSigTag(ann map[string]string, payload, sig []byte) (found string, idErr bool, err error) {
	b, err := sigTagBundle(ann, payload, sig)
	if err != nil {
		return "", false, err
	}
	digest := sha256Sum(payload)
	_, err = e.bundleV.Verify(b, sgverify.NewPolicy(sgverify.WithArtifactDigest("sha256", digest), sgverify.WithCertificateIdentity(*e.identity)))
	if err == nil {
		return bundleIdentity(b), false, nil
	}
	var mismatch *sgverify.ErrNoMatchingCertificateIdentity
	if errors.As(err, &mismatch) {
		return bundleIdentity(b), true, err
	}
	if why := outsideValidity(b); why != "" {
		err = fmt.Errorf("%s: %w", why, err)
	}
	return "", false, err
}

// sha256Sum is the SHA-256 of data.
func sha256Sum(data []byte) []byte {
	h := sha256.Sum256(data)
	return h[:]
}
