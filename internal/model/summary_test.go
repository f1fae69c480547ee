package model

import (
	"testing"
	"time"
)

// TestNewSummary: what a verification summary says for each outcome, and
// that a failed verification, one not required and one a registry
// failure kept from a verdict get none.
func TestNewSummary(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		v     Verification
		ok    bool
		level string
	}{
		{"verified", Verification{Status: VerifyVerified, Mode: "enforce", Policy: "publish.yaml:7", PolicyDigest: "ab"}, true, LevelSignatureVerified},
		{"unsigned, if-signed", Verification{Status: VerifyUnsigned, Mode: VerifyModeIfSigned, NoSignature: true, Policy: "publish.yaml:7"}, true, LevelUnsignedAccepted},
		{"unsigned, warn", Verification{Status: VerifyUnsigned, Mode: "warn", NoSignature: true}, false, ""},
		{"untrusted, warn", Verification{Status: VerifyUntrusted, Mode: "warn"}, false, ""},
		{"not required", Verification{Status: VerifyNotRequired}, false, ""},
		{"registry failure", Verification{Status: VerifyUnsigned, Mode: VerifyModeIfSigned, NoSignature: true, Err: errTest{}}, false, ""},
	} {
		s, ok := NewSummary(tc.v, "reg.example/app@sha256:1", []string{"reg.example/app@sha256:2"}, at)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if !s.Passed || len(s.Levels) != 1 || s.Levels[0] != tc.level || s.PolicyURI != "publish.yaml#L7" || !s.Time.Equal(at) || s.ResourceURI != "reg.example/app@sha256:1" {
			t.Errorf("%s: %+v", tc.name, s)
		}
	}
}

type errTest struct{}

func (errTest) Error() string { return "HTTP 500" }
