package model

import (
	"errors"
	"slices"
	"testing"
)

// TestVerificationOutcome: what fails under each mode, and how the plan
// and the log count each verdict. An image with no signature at all is
// accepted under if-signed only; a missing image, an index signed in part
// and a signature that does not verify fail in every mode; a registry
// failure has no outcome.
func TestVerificationOutcome(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v       Verification
		failed  bool
		outcome string
	}{
		{"verified", Verification{Status: VerifyVerified, Mode: "enforce", Digest: "sha256:1"}, false, OutcomeSigned},
		{"no signature, enforce", Verification{Status: VerifyUnsigned, Mode: "enforce", Digest: "sha256:1", NoSignature: true}, true, OutcomeUnsigned},
		{"no signature, warn", Verification{Status: VerifyUnsigned, Mode: "warn", Digest: "sha256:1", NoSignature: true}, true, OutcomeUnsigned},
		{"no signature, if-signed", Verification{Status: VerifyUnsigned, Mode: VerifyModeIfSigned, Digest: "sha256:1", NoSignature: true}, false, OutcomeUnsigned},
		{"missing image, if-signed", Verification{Status: VerifyUnsigned, Mode: VerifyModeIfSigned}, true, OutcomeFailed},
		{"index signed in part, if-signed", Verification{Status: VerifyUnsigned, Mode: VerifyModeIfSigned, Digest: "sha256:1"}, true, OutcomeFailed},
		{"foreign key, if-signed", Verification{Status: VerifyUntrusted, Mode: VerifyModeIfSigned, Digest: "sha256:1"}, true, OutcomeFailed},
		{"identity, if-signed", Verification{Status: VerifyIdentity, Mode: VerifyModeIfSigned, Digest: "sha256:1"}, true, OutcomeFailed},
		{"registry failure, if-signed", Verification{Status: VerifyUnsigned, Mode: VerifyModeIfSigned, Err: errors.New("HTTP 500")}, true, ""},
		{"not required", Verification{Status: VerifyNotRequired}, false, ""},
	} {
		if got := tc.v.Failed(); got != tc.failed {
			t.Errorf("%s: Failed() = %v", tc.name, got)
		}
		if got := tc.v.Outcome(); got != tc.outcome {
			t.Errorf("%s: Outcome() = %q, want %q", tc.name, got, tc.outcome)
		}
	}

	var c SignatureCounts
	for _, v := range []Verification{
		{Image: "a", Status: VerifyVerified},
		{Image: "b", Status: VerifyUnsigned, NoSignature: true},
		{Image: "c", Status: VerifyUntrusted},
		{Image: "a", Status: VerifyVerified}, // named by a second version
		{Image: "d", Status: VerifyNotRequired},
	} {
		c.Add(v)
	}
	if !slices.Equal(c.Signed, []string{"a"}) || !slices.Equal(c.Unsigned, []string{"b"}) || !slices.Equal(c.Failed, []string{"c"}) || c.String() != "1 signed, 1 unsigned, 1 failed" || c.Empty() {
		t.Errorf("counts: %+v %q", c, c)
	}
}
