package registry

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// MaxManifestSize is the largest manifest or image index (and referrers
// list) publish reads from a registry: 4 MiB, the limit distribution and
// containerd set for what they accept. go-containerregistry's own limit is
// 100 MiB, which lets a hostile registry make every run hold that much.
const MaxManifestSize = 4 << 20

// isManifestRequest reports whether r fetches a manifest or a referrers
// list (GET /v2/<name>/manifests/<ref> or /v2/<name>/referrers/<digest>).
func isManifestRequest(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	p := r.URL.Path
	return strings.HasPrefix(p, "/v2/") && (strings.Contains(p, "/manifests/") || strings.Contains(p, "/referrers/"))
}

// capManifest caps the body of a manifest response at MaxManifestSize: a
// larger Content-Length is refused at once, a longer body fails when it
// passes the cap. Both errors are *PermanentError (not retried).
func capManifest(r *http.Request, resp *http.Response) error {
	if !isManifestRequest(r) || resp.StatusCode != http.StatusOK {
		return nil
	}
	if resp.ContentLength > MaxManifestSize {
		return tooLarge(r, resp.ContentLength)
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, r: r, left: MaxManifestSize}
	return nil
}

func tooLarge(r *http.Request, n int64) error {
	size := "more than 4 MiB"
	if n > 0 {
		size = fmt.Sprintf("%d bytes", n)
	}
	return &PermanentError{Err: fmt.Errorf("GET %s: the manifest is %s, over the limit of %d bytes (4 MiB) publish reads: the registry is broken or hostile", r.URL.Redacted(), size, MaxManifestSize)}
}

type cappedBody struct {
	io.ReadCloser
	r    *http.Request
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more than the cap tells a body of exactly the cap
		// from a longer one.
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, tooLarge(b.r, 0)
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// MinBlobRate is the slowest transfer a blob download may average, in
// bytes per second: a blob of n bytes must arrive within the per-request
// timeout plus n / MinBlobRate, however steadily a registry trickles it
// (one byte every few seconds never trips the inactivity timeout).
const MinBlobRate = 64 << 10

// blobDeadline is the total time a GET of a blob of n bytes may take
// after its response headers: timeout + n / MinBlobRate, or 0 (none) when
// r is not a blob GET or n is unknown.
func blobDeadline(r *http.Request, n int64, timeout time.Duration) time.Duration {
	if r.Method != http.MethodGet || n <= 0 || !strings.HasPrefix(r.URL.Path, "/v2/") || !strings.Contains(r.URL.Path, "/blobs/") {
		return 0
	}
	return timeout + time.Duration(n/MinBlobRate+1)*time.Second
}

// overdueError is a blob download that ran past its total deadline.
type overdueError struct {
	url   string
	size  int64
	after time.Duration
}

func (e *overdueError) Error() string {
	return fmt.Sprintf("GET %s: %d bytes did not arrive within %v (slower than %d KiB/s on average): the registry is too slow or stalling on purpose", e.url, e.size, e.after, MinBlobRate>>10)
}

// deadline arms the total deadline of a blob download on b: when it passes,
// the request is cancelled and reads fail with a *PermanentError wrapping
// an *overdueError.
func (b *watchedBody) deadline(clock Clock, d time.Duration, size int64) {
	if d <= 0 {
		return
	}
	b.overdue = new(atomic.Bool)
	b.overdueErr = &PermanentError{Err: &overdueError{url: b.url, size: size, after: d}}
	b.total = clock.AfterFunc(d, func() {
		b.overdue.Store(true)
		b.cancel()
	})
}
