package model

// Verification statuses (Verification.Status; docs/signatures.md).
const (
	// VerifyVerified: a signature made with the policy's key, or by its
	// keyless identity, binds the image's digest.
	VerifyVerified = "verified"
	// VerifyUnsigned: no signature was found (no Sigstore bundle referrer,
	// no .sig tag), or the registry could not be asked.
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
	// Expected is what counts as signed ("key publish/vendor.pub",
	// "issuer X, subject Y"); Found what was found instead (or the
	// signature that verified).
	Expected string `json:"expected,omitempty"`
	Found    string `json:"found,omitempty"`
	// Signature says which form verified: "bundle" (a Sigstore bundle
	// referrer) or "sig-tag" (a cosign .sig tag).
	Signature string `json:"signature,omitempty"`
	// Err is the registry failure (credentials, TLS, the network, a
	// server error) that kept the image or its signatures from being read:
	// the status is unsigned for want of an answer, and the caller reports
	// a registry failure, not a finding of the image. Nil otherwise (an
	// image that does not exist is the image's problem).
	Err error `json:"-"`
}

// Failed reports whether v is a verification failure (unsigned,
// untrusted, identity).
func (v Verification) Failed() bool {
	switch v.Status {
	case VerifyUnsigned, VerifyUntrusted, VerifyIdentity:
		return true
	}
	return false
}
