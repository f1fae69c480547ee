package registry

import (
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/operator-publish/publish/internal/logging"
)

// monitor reports the requests that wait (a registry
// that accepts connections and never answers must not mean minutes of
// silence). Off a terminal it logs, every interval, one line per registry
// host whose requests moved no byte for at least that long. On a terminal
// (the logger writes to a logging.Status) it draws them on the live status
// line instead, redrawn every statusEvery, and erases it as soon as no
// request waits. It runs one timer per client, and only while requests are
// in flight.
type monitor struct {
	log   *slog.Logger
	clock Clock
	every time.Duration
	// status is the client's part of the terminal's status line; nil:
	// log lines.
	status *logging.StatusPart

	mu    sync.Mutex
	reqs  map[*inflight]struct{}
	timer Timer
	gen   int // generation of timer: a stale tick does nothing
	frame int // of the spinner, one per status redraw
}

// newMonitor returns the monitor logging to log every interval, or, when
// log writes to a terminal's status line (logging.StatusOf), drawing
// there every statusEvery.
func newMonitor(log *slog.Logger, clock Clock, interval, statusEvery time.Duration) *monitor {
	m := &monitor{log: log, clock: clock, every: interval, reqs: map[*inflight]struct{}{}}
	if st := logging.StatusOf(log); st != nil {
		m.status, m.every = st.Part(), statusEvery
	}
	return m
}

// inflight is one request being sent or read.
type inflight struct {
	m      *monitor
	host   string
	what   string
	start  time.Time
	budget *budget

	mu   sync.Mutex
	last time.Time // last byte moved (or the start)
}

func (r *inflight) progress() {
	now := r.m.clock.Now()
	r.mu.Lock()
	r.last = now
	r.mu.Unlock()
}

func (r *inflight) done() { r.m.remove(r) }

func (r *inflight) idleSince() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// add registers request r (retried within budget b).
func (m *monitor) add(r *http.Request, b *budget) *inflight {
	now := m.clock.Now()
	f := &inflight{m: m, host: r.URL.Host, what: describeRequest(r), start: now, last: now, budget: b}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs[f] = struct{}{}
	if m.timer == nil {
		m.gen++
		gen := m.gen
		m.timer = m.clock.AfterFunc(m.every, func() { m.tick(gen) })
	}
	return f
}

func (m *monitor) remove(f *inflight) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.reqs, f)
	if len(m.reqs) == 0 && m.timer != nil {
		m.timer.Stop()
		m.timer = nil
		m.gen++
	}
	if m.status != nil {
		// A request that ends leaves the status line at once (and the
		// line goes when none waits).
		m.status.Set(statusText(m.frame, m.waitingLocked()))
	}
}

// waiting is what one progress line says about a host.
type waiting struct {
	host    string
	what    string        // the request waiting longest
	waited  time.Duration // how long it has moved no byte
	total   time.Duration // since it was sent
	retries int           // retries of its operation so far
	of      int           // tries its operation may take
	n       int           // requests of the host that wait
}

// waitingLocked returns, per host in host order, the requests that moved
// no byte for at least m.every (m.mu held).
func (m *monitor) waitingLocked() []*waiting {
	now := m.clock.Now()
	byHost := map[string]*waiting{}
	for f := range m.reqs {
		idle := now.Sub(f.idleSince())
		if idle < m.every {
			continue
		}
		w := byHost[f.host]
		if w == nil {
			w = &waiting{host: f.host}
			byHost[f.host] = w
		}
		w.n++
		if idle > w.waited || idle == w.waited && f.what < w.what {
			w.what, w.waited, w.total = f.what, idle, now.Sub(f.start)
			w.retries, w.of = max(f.budget.spent()-1, 0), f.budget.policy.Attempts
		}
	}
	ws := make([]*waiting, 0, len(byHost))
	for _, w := range byHost {
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].host < ws[j].host })
	return ws
}

func (m *monitor) tick(gen int) {
	m.mu.Lock()
	if gen != m.gen {
		m.mu.Unlock()
		return
	}
	ws := m.waitingLocked()
	m.gen++
	gen = m.gen
	m.timer = m.clock.AfterFunc(m.every, func() { m.tick(gen) })
	if m.status != nil {
		m.frame++
		m.status.Set(statusText(m.frame, ws))
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	for _, w := range ws {
		m.log.Info("waiting for registry", "host", w.host, "request", w.what,
			"waited", w.waited.Round(time.Second).String(), "since", w.total.Round(time.Second).String(),
			"retries", w.retries, "of", w.of, "waiting", w.n)
	}
}

// spinner is the frame sequence of the status line (the braille dots of
// docker compose and most Go CLIs).
var spinner = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// statusText is the status line of the waiting requests ws (one per
// host), "" when none waits: the request that waited longest, e.g.
//
//	⠋ waiting 42s for registry.example.com: PUT blob op/x@sha256:0123456789ab… (try 3/5)
//
// with "(try N/M)" once it was retried, and ", K requests waiting" when
// more than one waits (all hosts counted).
func statusText(frame int, ws []*waiting) string {
	var top *waiting
	n := 0
	for _, w := range ws {
		n += w.n
		if top == nil || w.waited > top.waited {
			top = w
		}
	}
	if top == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%c waiting %s for %s: %s", spinner[frame%len(spinner)], top.waited.Round(time.Second), top.host, shortDigests(top.what))
	if top.retries > 0 {
		fmt.Fprintf(&b, " (try %d/%d)", top.retries+1, top.of)
	}
	if n > 1 {
		fmt.Fprintf(&b, ", %d requests waiting", n)
	}
	return b.String()
}

// shortDigests cuts each "sha256:" digest in s to its first 12 hex digits
// and "…", as docker and crane show them.
func shortDigests(s string) string {
	const algo = "sha256:"
	var b strings.Builder
	for {
		i := strings.Index(s, algo)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := i + len(algo)
		k := j
		for k < len(s) && strings.IndexByte("0123456789abcdef", s[k]) >= 0 {
			k++
		}
		b.WriteString(s[:j])
		if k-j > 12 {
			b.WriteString(s[j:j+12] + "…")
		} else {
			b.WriteString(s[j:k])
		}
		s = s[k:]
	}
}

// describeRequest says what a registry request is, from its method and
// the distribution API path (/v2/<name>/manifests/<reference>,
// /v2/<name>/blobs/<digest>, /v2/<name>/blobs/uploads/…), e.g. "GET
// manifest library/busybox:1.36". Other URLs (a token service) are named
// by their path.
func describeRequest(r *http.Request) string {
	p := r.URL.Path
	rest, ok := strings.CutPrefix(p, "/v2/")
	if !ok {
		return r.Method + " " + p
	}
	if rest == "" {
		return r.Method + " /v2/ (ping)"
	}
	for _, k := range []string{"/manifests/", "/blobs/uploads/", "/blobs/", "/referrers/", "/tags/"} {
		if i := strings.LastIndex(rest, k); i >= 0 {
			repo, ref := rest[:i], rest[i+len(k):]
			switch k {
			case "/manifests/":
				sep := ":"
				if strings.Contains(ref, ":") {
					sep = "@"
				}
				return r.Method + " manifest " + repo + sep + ref
			case "/blobs/uploads/":
				return r.Method + " blob upload to " + repo
			case "/blobs/":
				return r.Method + " blob " + repo + "@" + ref
			case "/referrers/":
				return r.Method + " referrers of " + repo + "@" + ref
			default:
				return r.Method + " tags of " + repo
			}
		}
	}
	return r.Method + " " + p
}
