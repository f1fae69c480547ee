package model

import (
	"fmt"
	"strings"
)

// Verification statuses (Verification.Status; docs/signatures.md).
const (
	// VerifyVerified: a signature made with the policy's key, or by its
	// keyless identity, binds the image's digest.
	VerifyVerified = "verified"
	// VerifyUnsigned: no signature was found (no Sigstore bundle referrer,
	// no .sig tag; Verification.NoSignature), the image does not exist, a
	// platform child of an index (index: children) is unsigned beside
	// signed ones, or the registry could not be asked (Verification.Err).
	VerifyUnsigned = "unsigned"
	// VerifyUntrusted: signatures were found, none verifies with the
	// policy's key or trusted root, or none binds the image's digest.
	VerifyUntrusted = "untrusted"
	// VerifyIdentity: a keyless signature verifies against the trusted root
	// but its certificate names another identity than the policy's.
	VerifyIdentity = "identity"
	// VerifyNotRequired: no policy entry covers the image, or its entry
	// is off.
	VerifyNotRequired = "not-required"
)

// VerifyModeIfSigned is the publish.yaml verify mode (config.VerifyIfSigned)
// under which an image with no signature at all is accepted: a
// Verification of that mode with NoSignature is not Failed.
const VerifyModeIfSigned = "if-signed"

// The outcomes of a verification (Verification.Outcome), as the plan and
// the run's log count them per artifact.
const (
	// OutcomeSigned: a signature verified (status verified).
	OutcomeSigned = "signed"
	// OutcomeUnsigned: the image was read and has no signature at all
	// (NoSignature); the mode decides whether that fails: an error under
	// enforce, a warning under warn, accepted under if-signed.
	OutcomeUnsigned = "unsigned"
	// OutcomeFailed: signatures exist and none verifies (untrusted,
	// identity), the image does not exist, or an index is signed only in
	// part (index: children): a failure in every mode but off (a warning
	// under warn).
	OutcomeFailed = "failed"
)

// Verification is the result of checking one image's signatures against
// the publish.yaml verify policy (internal/verify).
type Verification struct {
	// Image is the reference as the manifest names it; Digest what it
	// resolved to ("" when it could not be read).
	Image  string `json:"image"`
	Digest string `json:"digest,omitempty"`
	// Status is one of the Verify* constants.
	Status string `json:"status"`
	// Mode is the policy entry's mode (enforce, warn); "" when not
	// required.
	Mode string `json:"mode,omitempty"`
	// Policy is where the deciding entry is, "publish.yaml:LINE".
	Policy string `json:"policy,omitempty"`
	// PolicyDigest is the SHA-256 (hex) of the deciding entry as
	// publish.yaml gives it (its pattern, mode, index, key or keyless
	// identity and trusted root): what a verification summary names as
	// its policy's digest. "" when not required.
	PolicyDigest string `json:"-"`
	// Expected is what counts as signed ("key publish/vendor.pub",
	// "issuer X, subject Y"); Found what was found instead (or the
	// signature that verified).
	Expected string `json:"expected,omitempty"`
	Found    string `json:"found,omitempty"`
	// Signature says which form verified: "bundle" (a Sigstore bundle
	// referrer) or "sig-tag" (a cosign .sig tag).
	Signature string `json:"signature,omitempty"`
	// NoSignature is true when the image was read and no signature of it
	// was found at all, and no registry failure kept one from being read:
	// no Sigstore bundle referrer and no .sig tag of the image (and, with
	// index: children, of any platform child). Status is then
	// VerifyUnsigned. It is false for an image that does not exist, and
	// for a platform child unsigned beside signed ones.
	NoSignature bool `json:"-"`
	// Err is the registry failure (credentials, TLS, the network, a
	// server error) that kept the image or its signatures from being read:
	// the status is unsigned for want of an answer, and the caller reports
	// a registry failure, not a finding of the image. Nil otherwise (an
	// image that does not exist is the image's problem).
	Err error `json:"-"`
}

// Failed reports whether v is a verification failure, a finding of the
// image: untrusted, identity, or unsigned, except an image with no
// signature at all under mode if-signed (accepted as unsigned).
func (v Verification) Failed() bool {
	switch v.Status {
	case VerifyUntrusted, VerifyIdentity:
		return true
	case VerifyUnsigned:
		return v.Mode != VerifyModeIfSigned || !v.NoSignature || v.Err != nil
	}
	return false
}

// Outcome sorts v into OutcomeSigned, OutcomeUnsigned or OutcomeFailed;
// "" when no policy entry required the image (VerifyNotRequired) or a
// registry failure kept it from being checked (Err: no verdict).
func (v Verification) Outcome() string {
	switch {
	case v.Err != nil, v.Status == VerifyNotRequired, v.Status == "":
		return ""
	case v.Status == VerifyVerified:
		return OutcomeSigned
	case v.NoSignature:
		return OutcomeUnsigned
	}
	return OutcomeFailed
}

// SignatureCounts lists images by the Outcome of their verification: the
// per-artifact account of the plan (report.PlanArtifact.Signatures) and of
// the run's log. Each list holds image references as manifests name them,
// each once, in the order added.
type SignatureCounts struct {
	Signed   []string `json:"signed"`
	Unsigned []string `json:"unsigned"`
	Failed   []string `json:"failed"`
}

// Add puts v.Image in the list of its Outcome; nothing for an image not
// required or not checked, or one already listed.
func (s *SignatureCounts) Add(v Verification) {
	var list *[]string
	switch v.Outcome() {
	case OutcomeSigned:
		list = &s.Signed
	case OutcomeUnsigned:
		list = &s.Unsigned
	case OutcomeFailed:
		list = &s.Failed
	default:
		return
	}
	if !s.has(v.Image) {
		*list = append(*list, v.Image)
	}
}

// Merge adds the images of o to s, each in o's list, unless s lists it
// already (in any list).
func (s *SignatureCounts) Merge(o SignatureCounts) {
	for _, l := range []struct {
		from []string
		to   *[]string
	}{{o.Signed, &s.Signed}, {o.Unsigned, &s.Unsigned}, {o.Failed, &s.Failed}} {
		for _, img := range l.from {
			if !s.has(img) {
				*l.to = append(*l.to, img)
			}
		}
	}
}

// has reports whether s lists img.
func (s *SignatureCounts) has(img string) bool {
	for _, l := range [][]string{s.Signed, s.Unsigned, s.Failed} {
		for _, i := range l {
			if i == img {
				return true
			}
		}
	}
	return false
}

// Empty reports whether s lists no image.
func (s SignatureCounts) Empty() bool {
	return len(s.Signed)+len(s.Unsigned)+len(s.Failed) == 0
}

// String counts s as the log says it: "2 signed, 1 unsigned, 0 failed".
func (s SignatureCounts) String() string {
	return fmt.Sprintf("%d signed, %d unsigned, %d failed", len(s.Signed), len(s.Unsigned), len(s.Failed))
}

// Detail is String followed by the images unsigned and failed, as the
// log lists them per artifact: "2 signed, 1 unsigned, 0 failed; unsigned:
// REF".
func (s SignatureCounts) Detail() string {
	line := s.String()
	if len(s.Unsigned) > 0 {
		line += "; unsigned: " + strings.Join(s.Unsigned, ", ")
	}
	if len(s.Failed) > 0 {
		line += "; failed: " + strings.Join(s.Failed, ", ")
	}
	return line
}
