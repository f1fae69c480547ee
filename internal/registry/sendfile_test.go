package registry

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingSection is a FileSection that counts the bytes read through
// Read: none when it goes out by sendfile.
type countingSection struct {
	*FileSection
	read atomic.Int64
}

func (s *countingSection) Read(p []byte) (int, error) {
	n, err := s.FileSection.Read(p)
	s.read.Add(int64(n))
	return n, err
}

// TestFileBodySendfile: a request body that is a file at the offset of its
// bytes goes out by sendfile (never read by the client), and the server
// receives exactly those bytes.
func TestFileBodySendfile(t *testing.T) {
	const size, off = 3<<20 + 17, 4096
	data := make([]byte, off+size+100)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{PlainHTTP: true, Retry: RetryPolicy{Attempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	sec, err := OpenSection(path, off, size)
	if err != nil {
		t.Fatal(err)
	}
	defer sec.Close()
	body := &countingSection{FileSection: sec}
	req, err := http.NewRequest(http.MethodPut, srv.URL+"/v2/a/b/blobs/uploads/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Body, req.ContentLength = body, size
	resp, err := c.Transport().RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if b := <-got; string(b) != string(data[off:off+size]) {
		t.Fatalf("the server received %d bytes, not the %d of the file's section", len(b), size)
	}
	if n := body.read.Load(); n != 0 {
		t.Errorf("%d bytes of the file body went through Read: not sent by sendfile", n)
	}
}

// TestFileBodyWatchdog: a file body sent by sendfile never calls Read, so
// the inactivity timeout takes the file's offset moving as progress (the
// request goes on), and still cancels the request once nothing moves (the
// server never answers).
func TestFileBodyWatchdog(t *testing.T) {
	const size = 256 << 10 // fits in the sockets' buffers: sent whole though never read
	path := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // reads nothing, answers nothing until the test ends
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before srv.Close, which waits for the handler
	clock := newFakeClock()
	c, err := New(Options{PlainHTTP: true, Clock: clock, Timeout: 10 * time.Second, Retry: RetryPolicy{Attempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan struct{})
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { close(wrote) },
	}), http.MethodPut, srv.URL+"/v2/a/b/blobs/uploads/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := OpenSection(path, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	defer sec.Close()
	body := &countingSection{FileSection: sec}
	req.Body, req.ContentLength = body, size
	done := make(chan error, 1)
	go func() {
		resp, err := c.Transport().RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-wrote // sendfile returned: the offset is at the end
	rearmed := func() bool {
		clock.mu.Lock()
		defer clock.mu.Unlock()
		return clock.activeLocked() == 1
	}
	clock.Advance(10 * time.Second) // the offset moved: not cancelled
	if !rearmed() {
		t.Fatalf("cancelled although the file's offset moved: %v", <-done)
	}
	clock.Advance(10 * time.Second) // nothing moved since: cancelled
	if rearmed() {
		t.Fatal("not cancelled although nothing moved for the timeout")
	}
	err = <-done
	var te *timeoutError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "10s") {
		t.Fatalf("err = %v, want the inactivity timeout", err)
	}
	if n := body.read.Load(); n != 0 {
		t.Errorf("%d bytes went through Read: not sent by sendfile", n)
	}
}
