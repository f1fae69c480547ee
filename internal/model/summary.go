package model

import "time"

// SummaryPredicateType is the predicate type of a verification summary:
// SLSA's Verification Summary Attestation, v1
// (https://slsa.dev/spec/v1.0/verification_summary).
const SummaryPredicateType = "https://slsa.dev/verification_summary/v1"

// Our own verifiedLevels of a verification summary. SLSA reserves the
// values starting with SLSA_ for its tracks; publish verifies no SLSA
// track, only the signatures the publish.yaml verify rule asks for.
const (
	// LevelSignatureVerified: a signature verified with the rule's key
	// or keyless identity (Verification.Outcome signed).
	LevelSignatureVerified = "OPERATOR_PUBLISH_SIGNATURE_VERIFIED"
	// LevelUnsignedAccepted: no signature at all, accepted by a rule of
	// mode if-signed (Outcome unsigned, not Failed).
	LevelUnsignedAccepted = "OPERATOR_PUBLISH_UNSIGNED_ACCEPTED"
)

// Summary is what a verification summary says of one digest at the
// destination: the image (or one platform child of an image index) as
// publish mirrored it, after the verification v of the image the
// manifest names.
type Summary struct {
	// ResourceURI is the mirrored reference, REGISTRY/REPOSITORY@DIGEST.
	ResourceURI string
	// PolicyURI names the publish.yaml rule that decided
	// ("publish.yaml#L7"); PolicyDigest is the SHA-256 (hex) of that
	// rule (Verification.PolicyDigest).
	PolicyURI, PolicyDigest string
	// Inputs are the signatures and attestations of the digest at the
	// destination (Sigstore bundle referrers, .sig and .att tags, other
	// referrers), as REGISTRY/REPOSITORY@DIGEST, sorted; summaries are
	// left out.
	Inputs []string
	// Passed is the verificationResult (PASSED or FAILED; NewSummary
	// makes PASSED ones only); Levels the verifiedLevels (Level*
	// constants).
	Passed bool
	Levels []string
	// Time is timeVerified.
	Time time.Time
}

// NewSummary is the summary of the verification v for the mirrored
// digest resource (REGISTRY/REPOSITORY@DIGEST) with its inputs, at t;
// ok is false when v says nothing to summarize: no rule required the
// image, a registry failure kept it from being checked, or it failed its
// rule (mode warn let it through). A failed verification gets no summary:
// cosign verify --key and Flux's verify accept any Sigstore bundle that
// verifies with the key, whatever its predicate says, so a FAILED summary
// signed with the site's key would pass them.
func NewSummary(v Verification, resource string, inputs []string, t time.Time) (Summary, bool) {
	s := Summary{ResourceURI: resource, PolicyURI: PolicyURI(v.Policy), PolicyDigest: v.PolicyDigest, Inputs: inputs, Time: t}
	switch {
	case v.Outcome() == "", v.Failed():
		return Summary{}, false
	case v.Outcome() == OutcomeSigned:
		s.Passed, s.Levels = true, []string{LevelSignatureVerified}
	default:
		s.Passed, s.Levels = true, []string{LevelUnsignedAccepted}
	}
	return s, true
}

// PolicyURI turns "publish.yaml:LINE" (Verification.Policy) into the URI
// reference of the rule, "publish.yaml#LLINE", relative to the package
// repo's root.
func PolicyURI(policy string) string {
	for i := len(policy) - 1; i >= 0; i-- {
		if policy[i] == ':' {
			return policy[:i] + "#L" + policy[i+1:]
		}
	}
	return policy
}
