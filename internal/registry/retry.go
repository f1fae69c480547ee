package registry

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// RetryPolicy bounds the retries of one registry operation (reading a
// manifest, uploading a blob, writing a manifest): Attempts tries in all,
// counting the requests the transport repeats itself and the operations
// started again, so that one operation never costs more than Attempts
// tries. The wait before try n (n >= 2) is a random duration in
// [0, min(Max, Initial * 2^(n-2))] ("full jitter"), or the server's
// Retry-After when that is longer.
type RetryPolicy struct {
	// Attempts is the number of tries per operation (default 5; 1: no retry).
	Attempts int
	// Initial is the backoff before the second try (default 500ms).
	Initial time.Duration
	// Max caps one backoff (default 20s).
	Max time.Duration
	// MaxRetryAfter is the longest Retry-After that is honoured (default
	// 2m): a registry that asks for a longer wait fails the operation at once
	// with the wait in the message.
	MaxRetryAfter time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 5
	}
	if p.Initial <= 0 {
		p.Initial = 500 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 20 * time.Second
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 2 * time.Minute
	}
	return p
}

// backoff returns the wait before try n (n >= 2), full jitter.
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.Initial
	for i := 2; i < n && d < p.Max; i++ {
		d *= 2
	}
	if d > p.Max {
		d = p.Max
	}
	return time.Duration(rand.Int64N(int64(d) + 1))
}

// budget is the retry state of one operation, shared by the operation loop
// (Client.Retry) and the transport through the request context.
type budget struct {
	mu         sync.Mutex
	policy     RetryPolicy
	tries      int           // tries started
	retryAfter time.Duration // Retry-After of the last failed response
	retries    *atomic.Int64 // counter of the image, may be nil
	refused    error         // set once a Retry-After was too long: no more tries
}

type budgetKey struct{}

func budgetFrom(ctx context.Context) *budget {
	b, _ := ctx.Value(budgetKey{}).(*budget)
	return b
}

// next records a failed try and returns the wait before the next one, or
// ok=false when the budget is spent or the server asked for a wait longer
// than MaxRetryAfter (then err says so).
func (b *budget) next() (wait time.Duration, ok bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refused != nil {
		return 0, false, b.refused
	}
	if b.tries >= b.policy.Attempts {
		return 0, false, nil
	}
	ra := b.retryAfter
	b.retryAfter = 0
	if ra > b.policy.MaxRetryAfter {
		b.refused = fmt.Errorf("the registry asks to retry after %v, longer than %v: try again later", ra, b.policy.MaxRetryAfter)
		return 0, false, b.refused
	}
	b.tries++
	if b.retries != nil {
		b.retries.Add(1)
	}
	wait = b.policy.backoff(b.tries)
	if ra > wait {
		wait = ra
	}
	return wait, true, nil
}

func (b *budget) start() {
	b.mu.Lock()
	if b.tries == 0 {
		b.tries = 1
	}
	b.mu.Unlock()
}

func (b *budget) noteRetryAfter(d time.Duration) {
	b.mu.Lock()
	b.retryAfter = d
	b.mu.Unlock()
}

func (b *budget) spent() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tries
}

// Sleep waits d on clock, or until ctx is done (then it returns ctx.Err()).
func Sleep(ctx context.Context, clock Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	done := make(chan struct{})
	t := clock.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PermanentError marks an error that retrying cannot fix.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// exhaustedError is an operation that failed every try of its budget.
type exhaustedError struct{ err error }

func (e *exhaustedError) Error() string { return e.err.Error() }
func (e *exhaustedError) Unwrap() error { return e.err }

// timeoutError is a request that made no progress for the per-request
// timeout.
type timeoutError struct {
	method, url string
	after       time.Duration
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("%s %s: no response or data for %v (per-request timeout)", e.method, e.url, e.after)
}
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }

// permanentCodes are the distribution error codes that no retry can fix,
// whatever the HTTP status (distribution answers a manifest with a foreign
// layer it does not accept with HTTP 500 and MANIFEST_BLOB_UNKNOWN).
var permanentCodes = map[transport.ErrorCode]bool{
	transport.ManifestInvalidErrorCode:     true,
	transport.ManifestBlobUnknownErrorCode: true,
	transport.ManifestUnknownErrorCode:     true,
	transport.ManifestUnverifiedErrorCode:  true,
	transport.NameInvalidErrorCode:         true,
	transport.NameUnknownErrorCode:         true,
	transport.TagInvalidErrorCode:          true,
	transport.UnauthorizedErrorCode:        true,
	transport.DeniedErrorCode:              true,
	transport.UnsupportedErrorCode:         true,
	transport.SizeInvalidErrorCode:         true,
}

// retryableStatus are the HTTP statuses worth another try: 408, 429, 502,
// 503, 504, and a 500 that names no permanent error code.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// Retryable reports whether err (from a registry operation) may succeed when
// tried again: connection resets and other broken connections, per-request
// timeouts, truncated or corrupted transfers, HTTP 408, 429, 502, 503, 504
// and a 500 without a permanent error code. Never: 401, 403, 404,
// MANIFEST_INVALID, MANIFEST_BLOB_UNKNOWN (and the other codes in
// permanentCodes), TLS and certificate errors, refused connections, unknown
// hosts, a cancelled run, this machine's disk full.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || localDisk(err) {
		return false
	}
	var pe *PermanentError
	var ex *exhaustedError
	if errors.As(err, &pe) || errors.As(err, &ex) {
		return false
	}
	var te *transport.Error
	if errors.As(err, &te) {
		for _, d := range te.Errors {
			if permanentCodes[d.Code] {
				return false
			}
		}
		if retryableStatus(te.StatusCode) {
			return true
		}
		for _, d := range te.Errors {
			switch d.Code {
			case transport.BlobUploadUnknownErrorCode, transport.BlobUploadInvalidErrorCode, transport.DigestInvalidErrorCode, transport.TooManyRequestsErrorCode, transport.UnavailableErrorCode:
				// An upload session lost to a reset, data damaged on the
				// way: a new upload can succeed.
				return true
			}
		}
		return false
	}
	var ce x509.CertificateInvalidError
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	if errors.As(err, &ce) || errors.As(err, &ue) || errors.As(err, &he) {
		return false
	}
	var to *timeoutError
	if errors.As(err, &to) {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.IsTimeout || dnsErr.IsTemporary
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	// No typed error exists for these: net/http's HTTP/2 GOAWAY,
	// idle-connection and broken-transport errors are unexported, and
	// go-containerregistry's digest check (internal/verify) returns an
	// error of an internal package.
	msg := err.Error()
	for _, s := range []string{"connection reset", "broken pipe", "http2: server sent GOAWAY", "unexpected EOF", "error verifying sha256 checksum", "digest mismatch", "server closed idle connection", "transport connection broken"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// retryTransport is the HTTP transport below go-containerregistry's
// authentication: it sets the user agent, gives every request a
// per-request inactivity timeout, and repeats requests that are safe to
// repeat (GET, HEAD, and manifest PUTs, whose body can be sent again) when
// they fail in a retryable way, within the budget of the operation in the
// request context. Other requests (blob uploads) are repeated by the
// operation (Client.Retry), which starts the upload again; for them the
// transport only records Retry-After.
type retryTransport struct {
	inner     http.RoundTripper
	policy    RetryPolicy
	timeout   time.Duration
	userAgent string
	sleep     func(context.Context, time.Duration) error
	clock     Clock
	log       *slog.Logger
	mon       *monitor // nil: no progress lines
}

func replayable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPut:
		return strings.Contains(req.URL.Path, "/manifests/") && req.GetBody != nil
	}
	return false
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date
// (RFC 9110 §10.2.3). 0 when absent or unparsable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	b := budgetFrom(req.Context())
	if b == nil {
		b = &budget{policy: t.policy}
	}
	b.start()
	if t.userAgent != "" && req.Header.Get("User-Agent") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("User-Agent", t.userAgent)
	}
	canRepeat := replayable(req)
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 {
			r = req.Clone(req.Context())
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				r.Body = body
			}
		}
		resp, err := t.once(r, b)
		var retryErr error
		switch {
		case err != nil:
			if !Retryable(err) {
				return nil, err
			}
			retryErr = err
		case retryableStatus(resp.StatusCode):
			ra := retryAfter(resp.Header, t.clock.Now())
			if resp.StatusCode == http.StatusInternalServerError {
				// Peek at the error codes: distribution's 500 for a
				// foreign layer names MANIFEST_BLOB_UNKNOWN.
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
				resp.Body.Close()
				resp.Body = io.NopCloser(bytes.NewReader(body))
				if cerr := transport.CheckError(&http.Response{StatusCode: resp.StatusCode, Body: io.NopCloser(bytes.NewReader(body)), Request: r}, http.StatusOK); !Retryable(cerr) {
					return resp, nil
				}
			}
			b.noteRetryAfter(ra)
			if !canRepeat {
				return resp, nil
			}
			retryErr = fmt.Errorf("%s %s: %s", r.Method, r.URL.Redacted(), resp.Status)
			// Keep the response until we know whether to retry.
			wait, ok, _ := b.next()
			if !ok {
				return resp, nil
			}
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			t.logRetry(r, retryErr, b, wait)
			if err := t.sleep(req.Context(), wait); err != nil {
				return nil, err
			}
			continue
		default:
			return resp, nil
		}
		if !canRepeat {
			return nil, retryErr
		}
		wait, ok, werr := b.next()
		if !ok {
			if werr != nil {
				return nil, fmt.Errorf("%w; %v", retryErr, werr)
			}
			return nil, retryErr
		}
		t.logRetry(r, retryErr, b, wait)
		if err := t.sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

// logRetry says that request r is tried again after wait.
func (t *retryTransport) logRetry(r *http.Request, err error, b *budget, wait time.Duration) {
	t.log.Warn("registry request failed, retrying", "host", r.URL.Host, "request", describeRequest(r), "error", err.Error(), "try", b.spent(), "of", b.policy.Attempts, "wait", wait.Round(time.Millisecond).String())
}

// once sends r with an inactivity timeout: the request is cancelled when
// neither request body nor response body moves for t.timeout. While it
// waits, the monitor (if any) reports it.
func (t *retryTransport) once(r *http.Request, b *budget) (*http.Response, error) {
	parent := r.Context()
	ctx, cancel := context.WithCancel(parent)
	w := &watchdog{timeout: t.timeout, cancel: cancel, clock: t.clock}
	if t.mon != nil {
		w.req = t.mon.add(r, b)
	}
	var file sendfileBody
	if f, ok := r.Body.(sendfileBody); ok {
		file = f
		w.moved = offsetMoved(f)
	}
	w.arm()
	r = r.WithContext(ctx)
	if file != nil {
		r.Body = &fileBody{progressBody: progressBody{ReadCloser: r.Body, w: w}, f: file}
	} else if r.Body != nil && r.Body != http.NoBody {
		r.Body = &progressBody{ReadCloser: r.Body, w: w}
	}
	resp, err := t.inner.RoundTrip(r)
	if err != nil {
		fired := w.stop()
		cancel()
		if fired && parent.Err() == nil {
			return nil, &timeoutError{method: r.Method, url: r.URL.Redacted(), after: t.timeout}
		}
		return nil, err
	}
	w.kick()
	if resp.ContentLength == 0 || r.Method == http.MethodHead {
		// Nothing to read: the request is over. A caller that never
		// closes an empty body (go-containerregistry's push check cancels
		// its upload so) must not look in flight, and be reported as
		// waiting, for the rest of the run.
		w.stop()
	}
	wb := &watchedBody{ReadCloser: resp.Body, w: w, cancel: cancel, parent: parent, method: r.Method, url: r.URL.Redacted()}
	if resp.StatusCode == http.StatusOK {
		wb.deadline(t.clock, blobDeadline(r, resp.ContentLength, t.timeout), resp.ContentLength)
	}
	resp.Body = wb
	if err := capManifest(r, resp); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// watchdog cancels a request that makes no progress for timeout, and
// tells the monitor (req) of the progress.
type watchdog struct {
	mu      sync.Mutex
	timeout time.Duration
	// moved, when set, says whether the request moved since it was last
	// asked (a file body's offset): asked when the timeout is up, before
	// cancelling.
	moved   func() bool
	clock   Clock
	timer   Timer
	cancel  context.CancelFunc
	fired   bool
	stopped bool
	req     *inflight // nil: no monitor
}

func (w *watchdog) arm() {
	if w.timeout <= 0 {
		return
	}
	w.timer = w.clock.AfterFunc(w.timeout, func() {
		if w.moved != nil && w.moved() {
			w.kick() // a file body went out by sendfile: no reads to kick
			return
		}
		w.mu.Lock()
		if !w.stopped {
			w.fired = true
		}
		w.mu.Unlock()
		w.cancel()
	})
}

func (w *watchdog) kick() {
	if w.req != nil {
		w.req.progress()
	}
	if w.timer == nil {
		return
	}
	w.mu.Lock()
	if !w.stopped && !w.fired {
		w.timer.Reset(w.timeout)
	}
	w.mu.Unlock()
}

// stop disarms the watchdog and reports whether it had fired.
func (w *watchdog) stop() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped && w.req != nil {
		w.req.done()
	}
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
	return w.fired
}

type progressBody struct {
	io.ReadCloser
	w *watchdog
}

func (p *progressBody) Read(b []byte) (int, error) {
	n, err := p.ReadCloser.Read(b)
	if n > 0 {
		p.w.kick()
	}
	return n, err
}

type watchedBody struct {
	io.ReadCloser
	w           *watchdog
	cancel      context.CancelFunc
	parent      context.Context
	method, url string
	// total, overdue and overdueErr: the total deadline of a blob
	// download (deadline), nil without one.
	total      Timer
	overdue    *atomic.Bool
	overdueErr error
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.kick()
	}
	if err != nil && err != io.EOF && b.overdue != nil && b.overdue.Load() && b.parent.Err() == nil {
		return n, b.overdueErr
	}
	if err != nil && err != io.EOF {
		b.w.mu.Lock()
		fired := b.w.fired
		b.w.mu.Unlock()
		if fired && b.parent.Err() == nil {
			err = &timeoutError{method: b.method, url: b.url, after: b.w.timeout}
		}
	}
	return n, err
}

func (b *watchedBody) Close() error {
	if b.total != nil {
		b.total.Stop()
	}
	b.w.stop()
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
