package registry

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

func TestRetryable(t *testing.T) {
	terr := func(status int, codes ...transport.ErrorCode) error {
		e := &transport.Error{StatusCode: status}
		for _, c := range codes {
			e.Errors = append(e.Errors, transport.Diagnostic{Code: c})
		}
		return fmt.Errorf("wrapped: %w", e)
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{"broken pipe", &net.OpError{Op: "write", Err: syscall.EPIPE}, true},
		{"truncated", io.ErrUnexpectedEOF, true},
		{"timeout", &timeoutError{method: "GET", url: "u", after: time.Second}, true},
		{"408", terr(408), true},
		{"429", terr(429, transport.TooManyRequestsErrorCode), true},
		{"500", terr(500, transport.UnknownErrorCode), true},
		{"502", terr(502), true},
		{"503", terr(503), true},
		{"504", terr(504), true},
		{"upload lost", terr(404, transport.BlobUploadUnknownErrorCode), true},
		{"400", terr(400), false},
		{"401", terr(401, transport.UnauthorizedErrorCode), false},
		{"403", terr(403, transport.DeniedErrorCode), false},
		{"404", terr(404, transport.ManifestUnknownErrorCode), false},
		{"404 name", terr(404, transport.NameUnknownErrorCode), false},
		{"manifest invalid", terr(400, transport.ManifestInvalidErrorCode), false},
		{"manifest blob unknown", terr(400, transport.ManifestBlobUnknownErrorCode), false},
		{"foreign layer 500", terr(500, transport.UnknownErrorCode, transport.ManifestBlobUnknownErrorCode), false},
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, false},
		{"no such host", &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}, false},
		{"canceled", context.Canceled, false},
		{"permanent", &PermanentError{Err: io.ErrUnexpectedEOF}, false},
	}
	for _, tc := range tests {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("%s: Retryable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":     0,
		"3":    3 * time.Second,
		"-1":   0,
		"soon": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0,
	} {
		h := http.Header{}
		if v != "" {
			h.Set("Retry-After", v)
		}
		if got := retryAfter(h, now); got != want {
			t.Errorf("Retry-After %q = %v, want %v", v, got, want)
		}
	}
	p := RetryPolicy{}.withDefaults()
	for n := 2; n < 12; n++ {
		if d := p.backoff(n); d < 0 || d > p.Max {
			t.Errorf("backoff(%d) = %v, outside [0, %v]", n, d, p.Max)
		}
	}
}
