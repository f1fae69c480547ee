package registry

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// pushFlags are the flags of publish push (as pipeline.PushFlags).
var pushFlags = Flags{
	Dst:      CredentialFlags{"--username", "--password"},
	Registry: "--dst-repo",
	CA:       "--ca-file", PlainHTTP: "--plain-http",
}

func terr(status int, codes ...transport.ErrorCode) error {
	e := &transport.Error{StatusCode: status}
	for _, c := range codes {
		e.Errors = append(e.Errors, transport.Diagnostic{Code: c})
	}
	return fmt.Errorf("GET https://r.example.com/v2/: %w", e)
}

func TestClassify(t *testing.T) {
	cert := &x509.Certificate{}
	tests := []struct {
		name string
		err  error
		want Kind
	}{
		{"401", terr(401), KindUnauthorized},
		{"403", terr(403), KindForbidden},
		{"404", terr(404), KindNotFound},
		{"manifest unknown", terr(400, transport.ManifestUnknownErrorCode), KindNotFound},
		{"name unknown", terr(400, transport.NameUnknownErrorCode), KindNotFound},
		{"unauthorized code", terr(400, transport.UnauthorizedErrorCode), KindUnauthorized},
		{"denied code", terr(400, transport.DeniedErrorCode), KindForbidden},
		{"500", terr(500), KindOther},
		{"unknown authority", &url.Error{Op: "Get", URL: "u", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{Cert: cert}}}, KindUnknownAuthority},
		{"hostname", &url.Error{Op: "Get", URL: "u", Err: &tls.CertificateVerificationError{Err: x509.HostnameError{Certificate: cert, Host: "h"}}}, KindHostname},
		{"expired", &url.Error{Op: "Get", URL: "u", Err: x509.CertificateInvalidError{Cert: cert, Reason: x509.Expired}}, KindCertificate},
		{"record header", &url.Error{Op: "Get", URL: "u", Err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}}, KindPlainHTTP},
		{"scheme mismatch", &url.Error{Op: "Get", URL: "u", Err: http.ErrSchemeMismatch}, KindPlainHTTP},
		{"alert", &url.Error{Op: "Get", URL: "u", Err: tls.AlertError(40)}, KindTLS},
		{"refused", &url.Error{Op: "Get", URL: "u", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, KindUnreachable},
		{"no such host", &net.DNSError{Err: "no such host", Name: "r.example.com", IsNotFound: true}, KindUnreachable},
		{"watchdog", &timeoutError{method: "GET", url: "u", after: time.Minute}, KindTimeout},
		{"dial timeout", &url.Error{Op: "Get", URL: "u", Err: &net.OpError{Op: "dial", Err: timeoutNetErr{}}}, KindTimeout},
		{"plain", errors.New("something else"), KindOther},
	}
	for _, tc := range tests {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("%s: Classify(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

type timeoutNetErr struct{}

func (timeoutNetErr) Error() string   { return "i/o timeout" }
func (timeoutNetErr) Timeout() bool   { return true }
func (timeoutNetErr) Temporary() bool { return true }

// TestDescribeNamesTheCommandsFlags: each command's errors name its own
// flags, and only flags it has.
func TestDescribeNamesTheCommandsFlags(t *testing.T) {
	cert := &x509.Certificate{}
	unknownCA := &url.Error{Op: "Get", URL: "u", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{Cert: cert}}}
	tests := []struct {
		name      string
		flags     Flags
		side      Side
		err       error
		want      []string
		wantNot   []string
		wantKind  Kind
		wantAuthz bool
	}{
		{"push 401", pushFlags, Destination, terr(401), []string{"refused the credentials (401)", "--username/--password"}, []string{"--dst-", "--src-"}, KindUnauthorized, true},
		{"run 401 destination", RunFlags, Destination, terr(401), []string{"--dst-username/--dst-password"}, []string{"--src-"}, KindUnauthorized, true},
		{"run 401 source", RunFlags, Source, terr(401), []string{"--src-username/--src-password"}, []string{"--dst-"}, KindUnauthorized, true},
		{"push 403", pushFlags, Destination, terr(403), []string{"denied access (403)", "push rights"}, nil, KindForbidden, true},
		{"run 403 source", RunFlags, Source, terr(403), []string{"pull rights"}, nil, KindForbidden, true},
		{"run unknown CA", RunFlags, Source, unknownCA, []string{"--ca-file", "--insecure"}, nil, KindUnknownAuthority, false},
		{"push unknown CA", pushFlags, Destination, unknownCA, []string{"--ca-file"}, []string{"--insecure"}, KindUnknownAuthority, false},
		{"no flags at all", Flags{Registry: "-"}, Source, terr(401), []string{"check the docker config"}, []string{"--"}, KindUnauthorized, true},
		{"push plain HTTP", pushFlags, Destination, &url.Error{Op: "Get", URL: "u", Err: http.ErrSchemeMismatch}, []string{"speaks plain HTTP: pass --plain-http"}, nil, KindPlainHTTP, false},
	}
	for _, tc := range tests {
		err := DescribeSide(tc.flags, tc.side, "pushing to the destination", "r.example.com", tc.err)
		msg := err.Error()
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q does not say %q", tc.name, msg, w)
			}
		}
		for _, w := range tc.wantNot {
			if strings.Contains(msg, w) {
				t.Errorf("%s: %q says %q", tc.name, msg, w)
			}
		}
		var re *Error
		if !errors.As(err, &re) || re.Kind != tc.wantKind {
			t.Errorf("%s: %#v, want an *Error of kind %v", tc.name, err, tc.wantKind)
		}
		if IsAuth(err) != tc.wantAuthz {
			t.Errorf("%s: IsAuth = %v", tc.name, !tc.wantAuthz)
		}
		if NeedsFix(err) != (tc.wantAuthz || tc.wantKind == KindUnknownAuthority || tc.wantKind == KindPlainHTTP) {
			t.Errorf("%s: NeedsFix = %v", tc.name, NeedsFix(err))
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: the description does not wrap the error", tc.name)
		}
		// Described once: describing again changes nothing.
		if again := DescribeSide(RunFlags, Source, "other", "h", err); again != err {
			t.Errorf("%s: described twice: %v", tc.name, again)
		}
	}
}

// TestDescribeSideFromHost: the client takes the side from the host.
func TestDescribeSideFromHost(t *testing.T) {
	c, err := New(Options{DstHost: "dst.example.com:5000"})
	if err != nil {
		t.Fatal(err)
	}
	if msg := c.Describe("x", "dst.example.com:5000", terr(401)).Error(); !strings.Contains(msg, "--dst-username") {
		t.Errorf("destination: %s", msg)
	}
	if msg := c.Describe("x", "src.example.com", terr(401)).Error(); !strings.Contains(msg, "--src-username") {
		t.Errorf("source: %s", msg)
	}
	// A copy to the destination that fails reading the source: the
	// request says which registry it was.
	req, _ := http.NewRequest(http.MethodGet, "https://src.example.com/v2/a/manifests/v1", nil)
	srcErr := fmt.Errorf("reading manifest: %w", &transport.Error{StatusCode: 401, Request: req})
	if msg := c.Describe("copying", "dst.example.com:5000", srcErr).Error(); !strings.Contains(msg, "--src-username") || !strings.Contains(msg, "src.example.com refused") {
		t.Errorf("copy failing at the source: %s", msg)
	}
}

// TestTLSErrorsAreTyped: the errors of real TLS handshakes classify by
// type: an unknown authority, a name the certificate does not hold, and
// HTTPS spoken to a plain-HTTP server.
func TestTLSErrorsAreTyped(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) {}
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(ok))
	t.Cleanup(tlsSrv.Close)
	plainSrv := httptest.NewServer(http.HandlerFunc(ok))
	t.Cleanup(plainSrv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(tlsSrv.Certificate())
	tlsURL, _ := url.Parse(tlsSrv.URL)
	_, port, _ := net.SplitHostPort(tlsURL.Host)

	get := func(t *testing.T, o Options, u string) error {
		t.Helper()
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		resp, err := (&http.Client{Transport: c.Transport()}).Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s: no error", u)
		}
		return err
	}
	for _, tc := range []struct {
		name string
		o    Options
		url  string
		want Kind
	}{
		{"unknown authority", Options{}, tlsSrv.URL + "/v2/", KindUnknownAuthority},
		// httptest's certificate holds 127.0.0.1 and example.com, not localhost.
		{"hostname", Options{CAPool: pool}, "https://localhost:" + port + "/v2/", KindHostname},
		{"plain HTTP port", Options{}, strings.Replace(plainSrv.URL, "http://", "https://", 1) + "/v2/", KindPlainHTTP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := get(t, tc.o, tc.url)
			if got := Classify(err); got != tc.want {
				t.Errorf("Classify(%v) = %v, want %v", err, got, tc.want)
			}
			if Retryable(err) {
				t.Errorf("Retryable(%v): a TLS mistake is not transient", err)
			}
		})
	}
	t.Run("HTTP1", func(t *testing.T) {
		h2 := httptest.NewUnstartedServer(http.HandlerFunc(ok))
		h2.EnableHTTP2 = true
		h2.StartTLS()
		t.Cleanup(h2.Close)
		pool := x509.NewCertPool()
		pool.AddCert(h2.Certificate())
		for _, http1 := range []bool{false, true} {
			c, err := New(Options{CAPool: pool, HTTP1: http1})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&http.Client{Transport: c.Transport()}).Get(h2.URL + "/v2/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if want := map[bool]string{false: "HTTP/2.0", true: "HTTP/1.1"}[http1]; resp.Proto != want {
				t.Errorf("HTTP1 %v: spoke %s, want %s", http1, resp.Proto, want)
			}
		}
	})
}

// TestTLSErrorWithoutPlainHTTPRetry: go-containerregistry reads a loopback
// registry over HTTPS, then retries over plain HTTP, and joins both
// failures. Against an HTTPS registry the certificate failure is the
// whole story: the error says it without the plain-HTTP retry's answer
// ("Client sent an HTTP request to an HTTPS server"), and is still typed.
func TestTLSErrorWithoutPlainHTTPRetry(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the plain-HTTP retry's handshake error
	srv.StartTLS()
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ImagePlatforms(t.Context(), host+"/a/b:v1")
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "certificate") || !strings.Contains(msg, "https://"+host) {
		t.Errorf("%q: want the certificate failure of https://%s", msg, host)
	}
	for _, bad := range []string{"http://" + host, "HTTP request to an HTTPS server", "400"} {
		if strings.Contains(msg, bad) {
			t.Errorf("%q carries the plain-HTTP retry (%q)", msg, bad)
		}
	}
	if k := Classify(err); k != KindUnknownAuthority {
		t.Errorf("Classify = %v, want KindUnknownAuthority", k)
	}
	var ua x509.UnknownAuthorityError
	if !errors.As(err, &ua) {
		t.Errorf("%v: not an x509.UnknownAuthorityError any more", err)
	}
}
