package registry

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/operator-publish/publish/internal/logging"
)

// fakeClock is a Clock moved by hand: Advance runs the due timers, in
// order, before it returns.
type fakeClock struct {
	mu     sync.Mutex
	cond   *sync.Cond
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c      *fakeClock
	at     time.Time
	f      func()
	active bool
	seq    int
}

func newFakeClock() *fakeClock {
	c := &fakeClock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f, active: true, seq: len(c.timers)}
	c.timers = append(c.timers, t)
	c.cond.Broadcast()
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	t.c.cond.Broadcast()
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.at, t.active = t.c.now.Add(d), true
	t.c.cond.Broadcast()
	return was
}

// activeLocked counts the pending timers.
func (c *fakeClock) activeLocked() int {
	n := 0
	for _, t := range c.timers {
		if t.active {
			n++
		}
	}
	return n
}

// waitTimers blocks until n timers are pending.
func (c *fakeClock) waitTimers(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.activeLocked() != n {
		c.cond.Wait()
	}
}

// Advance moves the clock by d and runs the timers due by then.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for _, t := range c.timers {
		if t.active && !t.at.After(c.now) {
			t.active = false
			due = append(due, t)
		}
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool {
		if !due[i].at.Equal(due[j].at) {
			return due[i].at.Before(due[j].at)
		}
		return due[i].seq < due[j].seq
	})
	for _, t := range due {
		t.f()
	}
}

// recordHandler sends every log record to a channel.
type recordHandler struct{ ch chan slog.Record }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.ch <- r.Clone()
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

func attrs(r slog.Record) map[string]string {
	m := map[string]string{}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	return m
}

// holdListener accepts connections and never answers: a registry
// silent for minutes.
func holdListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// TestWaitingRequestIsReported: a registry that accepts the connection and
// never answers gets a line every interval (host, what, how long, the
// retries), the retry after the inactivity timeout a line of its own, and
// the lines go on for the retried request. Time is a fake clock: no
// sleeps, no timing.
func TestWaitingRequestIsReported(t *testing.T) {
	host := holdListener(t)
	clock := newFakeClock()
	recs := make(chan slog.Record, 64)
	c, err := New(Options{
		PlainHTTPHosts: []string{host}, Logger: slog.New(recordHandler{recs}), Clock: clock,
		Timeout: 35 * time.Second, Retry: RetryPolicy{Attempts: 2},
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/v2/library/busybox/manifests/1.36", nil)
		resp, err := (&http.Client{Transport: c.Transport()}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()

	next := func(t *testing.T) slog.Record {
		t.Helper()
		select {
		case r := <-recs:
			return r
		default:
			t.Fatal("no log line")
		}
		return slog.Record{}
	}
	wantWaiting := func(t *testing.T, r slog.Record, waited, retries string) {
		t.Helper()
		a := attrs(r)
		if r.Message != "waiting for registry" || a["host"] != host || a["request"] != "GET manifest library/busybox:1.36" || a["waited"] != waited || a["retries"] != retries || a["of"] != "2" {
			t.Errorf("got %q %v, want waiting for %s for %s after %s retries", r.Message, a, host, waited, retries)
		}
	}

	clock.waitTimers(2) // the progress line and the watchdog of the request
	clock.Advance(10 * time.Second)
	wantWaiting(t, next(t), "10s", "0")
	clock.Advance(10 * time.Second)
	wantWaiting(t, next(t), "20s", "0")
	clock.Advance(10 * time.Second)
	wantWaiting(t, next(t), "30s", "0")
	// 35s: the watchdog gives up and the request is retried, with a line
	// saying so.
	clock.Advance(5 * time.Second)
	r := <-recs // written by the request's goroutine: wait for it
	if a := attrs(r); r.Message != "registry request failed, retrying" || a["host"] != host || a["try"] != "2" || a["of"] != "2" || !strings.Contains(a["error"], "no response or data for 35s") {
		t.Errorf("got %q %v, want the retry", r.Message, a)
	}
	clock.waitTimers(2) // the second try is in flight
	clock.Advance(10 * time.Second)
	wantWaiting(t, next(t), "10s", "1")
	cancel()
	if err := <-errc; err == nil {
		t.Error("the request to a silent registry succeeded")
	}
	select {
	case r := <-recs:
		t.Errorf("unexpected line %q %v", r.Message, attrs(r))
	default:
	}
}

// TestQuietWithoutLogger: no logger, no lines and no progress timer.
func TestQuietWithoutLogger(t *testing.T) {
	clock := newFakeClock()
	c, err := New(Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if c.mon != nil || c.transport.mon != nil {
		t.Error("a progress monitor without a logger")
	}
}

// TestRetriesAreLogged: each retry of a request is a line (which host,
// what, the try and the budget).
func TestRetriesAreLogged(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	recs := make(chan slog.Record, 64)
	var waits atomic.Int32
	c, err := New(Options{Logger: slog.New(recordHandler{recs}), Sleep: func(ctx context.Context, d time.Duration) error {
		waits.Add(1)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: c.Transport()}).Get(srv.URL + "/v2/a/b/blobs/sha256:0123")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || waits.Load() != 2 {
		t.Fatalf("status %d after %d waits, want 200 after 2", resp.StatusCode, waits.Load())
	}
	for try := 2; try <= 3; try++ {
		r := <-recs
		a := attrs(r)
		if r.Message != "registry request failed, retrying" || a["request"] != "GET blob a/b@sha256:0123" || a["try"] != string(rune('0'+try)) || a["of"] != "5" || !strings.Contains(a["error"], "503") {
			t.Errorf("got %q %v, want retry %d of 5", r.Message, a, try)
		}
	}
}

func TestDescribeRequest(t *testing.T) {
	for u, want := range map[string]string{
		"https://r/v2/":                                    "GET /v2/ (ping)",
		"https://r/v2/a/b/manifests/v1":                    "GET manifest a/b:v1",
		"https://r/v2/a/b/manifests/sha256:00":             "GET manifest a/b@sha256:00",
		"https://r/v2/a/blobs/uploads/abc":                 "GET blob upload to a",
		"https://r/v2/a/blobs/sha256:00":                   "GET blob a@sha256:00",
		"https://r/v2/a/referrers/sha256:00":               "GET referrers of a@sha256:00",
		"https://r/v2/a/tags/list":                         "GET tags of a",
		"https://auth.example.com/token?scope=repo:a:pull": "GET /token",
	} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if got := describeRequest(req); got != want {
			t.Errorf("%s: %q, want %q", u, got, want)
		}
	}
}

// fakeTerminal is the stderr of a terminal for logging.NewStatus: every
// Write arrives on a channel, so a test sees the sequence drawn and can
// wait for the writes of a request's own goroutine.
type fakeTerminal struct{ writes chan string }

func newFakeTerminal() *fakeTerminal { return &fakeTerminal{writes: make(chan string, 64)} }

func (f *fakeTerminal) Write(p []byte) (int, error) {
	f.writes <- string(p)
	return len(p), nil
}

// now returns the next write, which the caller's own call made.
func (f *fakeTerminal) now(t *testing.T) string {
	t.Helper()
	select {
	case w := <-f.writes:
		return w
	default:
		t.Fatal("nothing drawn")
	}
	return ""
}

// none checks that nothing more was drawn.
func (f *fakeTerminal) none(t *testing.T) {
	t.Helper()
	select {
	case w := <-f.writes:
		t.Errorf("unexpected write %q", w)
	default:
	}
}

// statusClient returns a client whose logger writes to a terminal's
// status line (tty), on clock.
func statusClient(t *testing.T, host string, clock Clock, tty *fakeTerminal, timeout time.Duration) *Client {
	t.Helper()
	st := logging.NewStatus(tty, func() int { return 200 })
	c, err := New(Options{
		PlainHTTPHosts: []string{host}, Logger: logging.New(st, logging.Options{}), Clock: clock,
		Timeout: timeout, Retry: RetryPolicy{Attempts: 2},
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// hold sends GET path to the silent registry at host through c until ctx
// ends; the error arrives on the channel.
func hold(ctx context.Context, c *Client, host, path string) <-chan error {
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+path, nil)
		resp, err := (&http.Client{Transport: c.Transport()}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	return errc
}

// TestWaitingRequestStatus: on a terminal, a request that waits is a live
// status line, not log lines: drawn after a second, redrawn in place every
// second with the time it waited (no "waiting for registry" line), erased
// before the retry's log line, drawn again for the second try with the
// try count, and erased when the request ends. Time is a fake clock.
func TestWaitingRequestStatus(t *testing.T) {
	host := holdListener(t)
	clock := newFakeClock()
	tty := newFakeTerminal()
	c := statusClient(t, host, clock, tty, 3500*time.Millisecond)
	ctx, cancel := context.WithCancel(t.Context())
	errc := hold(ctx, c, host, "/v2/library/busybox/manifests/1.36")

	const what = " for " + "%s: GET manifest library/busybox:1.36"
	status := func(frame, waited string) string {
		return frame + " waiting " + waited + fmt.Sprintf(what, host)
	}
	clock.waitTimers(2) // the status redraw and the watchdog of the request
	clock.Advance(time.Second)
	if got, want := tty.now(t), status("⠙", "1s"); got != want {
		t.Errorf("drawn %q, want %q", got, want)
	}
	clock.Advance(time.Second)
	if got, want := tty.now(t), "\r\x1b[K"+status("⠹", "2s"); got != want {
		t.Errorf("redrawn %q, want %q", got, want)
	}
	clock.Advance(time.Second)
	if got, want := tty.now(t), "\r\x1b[K"+status("⠸", "3s"); got != want {
		t.Errorf("redrawn %q, want %q", got, want)
	}
	tty.none(t)
	// 3.5s: the watchdog gives up; the request's goroutine erases the
	// status and logs the retry.
	clock.Advance(500 * time.Millisecond)
	if got := <-tty.writes; got != "\r\x1b[K" {
		t.Errorf("the ended try left %q, want the status erased", got)
	}
	if got := <-tty.writes; !strings.HasPrefix(got, "warning: registry request failed, retrying host="+host) || !strings.Contains(got, "try=2 of=2 wait=") || !strings.HasSuffix(got, "\n") {
		t.Errorf("retry line %q", got)
	}
	clock.waitTimers(2) // the second try is in flight
	clock.Advance(time.Second)
	if got, want := tty.now(t), status("⠼", "1s")+" (try 2/2)"; got != want {
		t.Errorf("drawn %q, want %q", got, want)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Error("the request to a silent registry succeeded")
	}
	if got := <-tty.writes; got != "\r\x1b[K" {
		t.Errorf("the ended request left %q, want the status erased", got)
	}
	tty.none(t)
}

// TestWaitingRequestsStatusCount: several waiting requests are one status
// line, the longest wait and how many wait; as each ends the line shows
// the others, and it is erased with the last.
func TestWaitingRequestsStatusCount(t *testing.T) {
	host := holdListener(t)
	clock := newFakeClock()
	tty := newFakeTerminal()
	c := statusClient(t, host, clock, tty, time.Hour)
	ctxA, cancelA := context.WithCancel(t.Context())
	ctxB, cancelB := context.WithCancel(t.Context())
	defer cancelB()
	errA := hold(ctxA, c, host, "/v2/op/a/manifests/v1")
	clock.waitTimers(2) // the status redraw, a's watchdog
	clock.Advance(500 * time.Millisecond)
	errB := hold(ctxB, c, host, "/v2/op/b/blobs/sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	clock.waitTimers(3) // and b's watchdog
	clock.Advance(500 * time.Millisecond)
	if got, want := tty.now(t), "⠙ waiting 1s for "+host+": GET manifest op/a:v1"; got != want {
		t.Errorf("drawn %q, want %q", got, want)
	}
	clock.Advance(time.Second)
	if got, want := tty.now(t), "\r\x1b[K⠹ waiting 2s for "+host+": GET manifest op/a:v1, 2 requests waiting"; got != want {
		t.Errorf("drawn %q, want %q", got, want)
	}
	cancelA()
	<-errA
	if got, want := <-tty.writes, "\r\x1b[K⠹ waiting 2s for "+host+": GET blob op/b@sha256:0123456789ab…"; got != want {
		t.Errorf("after a ended: %q, want %q", got, want)
	}
	cancelB()
	<-errB
	if got := <-tty.writes; got != "\r\x1b[K" {
		t.Errorf("after the last ended: %q, want the status erased", got)
	}
	tty.none(t)
}

// TestWaitingLinesOffTerminal: the text logger on a writer that is not a
// terminal gets the lines exactly as before the status line existed, and
// no terminal control sequence.
func TestWaitingLinesOffTerminal(t *testing.T) {
	host := holdListener(t)
	clock := newFakeClock()
	var mu sync.Mutex
	var out strings.Builder
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return out.Write(p)
	})
	c, err := New(Options{PlainHTTPHosts: []string{host}, Logger: logging.New(w, logging.Options{}), Clock: clock, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := hold(ctx, c, host, "/v2/op/a/manifests/v1")
	clock.waitTimers(2)
	for range 3 {
		clock.Advance(time.Second) // no status redraws off a terminal
	}
	clock.Advance(7 * time.Second)
	clock.Advance(10 * time.Second)
	cancel()
	<-errc
	mu.Lock()
	defer mu.Unlock()
	want := "waiting for registry host=" + host + ` request="GET manifest op/a:v1" waited=10s since=10s retries=0 of=5 waiting=1` + "\n" +
		"waiting for registry host=" + host + ` request="GET manifest op/a:v1" waited=20s since=20s retries=0 of=5 waiting=1` + "\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestStatusText(t *testing.T) {
	for _, tc := range []struct {
		ws   []*waiting
		want string
	}{
		{nil, ""},
		{[]*waiting{{host: "a.example.com", what: "HEAD manifest x:v1", waited: 42 * time.Second, of: 5, n: 1}}, "⠙ waiting 42s for a.example.com: HEAD manifest x:v1"},
		{[]*waiting{
			{host: "a.example.com", what: "HEAD manifest x:v1", waited: 3 * time.Second, of: 5, n: 2},
			{host: "b.example.com", what: "PUT blob upload to y", waited: 95 * time.Second, retries: 2, of: 5, n: 1},
		}, "⠙ waiting 1m35s for b.example.com: PUT blob upload to y (try 3/5), 3 requests waiting"},
	} {
		if got := statusText(1, tc.ws); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	if got := shortDigests("GET blob a@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef, sha256:00"); got != "GET blob a@sha256:0123456789ab…, sha256:00" {
		t.Errorf("shortDigests: %q", got)
	}
}

// TestEmptyAnswerNotWaiting: a request whose answer has no body (a 204 to
// DELETE, a HEAD) is over with its headers: its caller may never close the
// body (go-containerregistry's push check cancels its upload without
// closing it) and no "waiting for registry" line follows.
func TestEmptyAnswerNotWaiting(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	clock := newFakeClock()
	recs := make(chan slog.Record, 64)
	c, err := New(Options{PlainHTTPHosts: []string{host}, Logger: slog.New(recordHandler{recs}), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{http.MethodDelete, http.MethodHead} {
		req, _ := http.NewRequest(method, srv.URL+"/v2/x/blobs/uploads/123", nil)
		resp, err := (&http.Client{Transport: c.Transport()}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp // never closed, as the push check does
	}
	clock.Advance(time.Minute)
	select {
	case r := <-recs:
		t.Errorf("unexpected line %q %v", r.Message, attrs(r))
	default:
	}
	c.mon.mu.Lock()
	n := len(c.mon.reqs)
	c.mon.mu.Unlock()
	if n != 0 {
		t.Errorf("%d requests still in flight after their empty answers", n)
	}
}
