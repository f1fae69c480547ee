package registry

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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
// request goes on), and still cancels the request once the offset stops
// (the server stopped reading).
func TestFileBodyWatchdog(t *testing.T) {
	const size = 64 << 20
	path := filepath.Join(t.TempDir(), "blob")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	first, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadFull(r.Body, make([]byte, 1<<20))
		close(first)
		<-release // reads nothing more until the test ends
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before srv.Close, which waits for the handler
	clock := newFakeClock()
	c, err := New(Options{PlainHTTP: true, Clock: clock, Timeout: 10 * time.Second, Retry: RetryPolicy{Attempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPut, srv.URL+"/v2/a/b/blobs/uploads/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := OpenSection(path, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	defer sec.Close()
	req.Body, req.ContentLength = sec, size
	done := make(chan error, 1)
	go func() {
		resp, err := c.Transport().RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-first
	clock.waitTimers(1)
	clock.Advance(10 * time.Second) // the offset moved a MiB at least: not cancelled
	clock.mu.Lock()
	rearmed := clock.activeLocked() == 1
	clock.mu.Unlock()
	if !rearmed {
		t.Fatalf("cancelled although the file's offset moved: %v", <-done)
	}
	// The socket's buffers fill up and sendfile stops: the next timeouts
	// find the offset still, one of them cancels.
	for i := 0; ; i++ {
		clock.Advance(10 * time.Second)
		clock.mu.Lock()
		rearmed := clock.activeLocked() == 1
		clock.mu.Unlock()
		if !rearmed {
			break
		}
		if i > 1000 {
			t.Fatal("the offset never stopped moving")
		}
	}
	err = <-done
	var te *timeoutError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "10s") {
		t.Fatalf("err = %v, want the inactivity timeout", err)
	}
}
