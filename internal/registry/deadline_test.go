package registry

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestBlobTotalDeadline: a registry that trickles a blob, one byte before
// each inactivity timeout, is stopped once the blob's total deadline
// (timeout + size / MinBlobRate) has passed, with an error saying so that
// is not retried.
func TestBlobTotalDeadline(t *testing.T) {
	const size = 1 << 20
	send := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case <-send:
				w.Write([]byte{'x'})
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	clock := newFakeClock()
	c, err := New(Options{PlainHTTP: true, Clock: clock, Timeout: 10 * time.Second, Retry: RetryPolicy{Attempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: c.Transport()}).Get(srv.URL + "/v2/a/b/blobs/sha256:" + strings.Repeat("0", 64))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	read := make(chan error)
	go func() {
		var b [1]byte
		for {
			_, err := resp.Body.Read(b[:])
			read <- err
			if err != nil {
				return
			}
		}
	}()
	want := blobDeadline(resp.Request, size, 10*time.Second) // 10s + 17s
	var elapsed time.Duration
	for elapsed+8*time.Second < want {
		send <- struct{}{}
		if err := <-read; err != nil {
			t.Fatalf("after %v: %v", elapsed, err)
		}
		clock.Advance(8 * time.Second) // within the inactivity timeout
		elapsed += 8 * time.Second
	}
	send <- struct{}{} // a last byte: the inactivity timeout is 10s away
	if err := <-read; err != nil {
		t.Fatalf("after %v: %v", elapsed, err)
	}
	clock.Advance(want - elapsed)
	err = <-read
	var oe *overdueError
	var pe *PermanentError
	if !errors.As(err, &oe) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "did not arrive within 27s") {
		t.Fatalf("err = %v, want the total deadline of 27s", err)
	}
	if Retryable(err) {
		t.Error("an overdue blob is retried")
	}
}
