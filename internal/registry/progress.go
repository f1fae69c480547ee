package registry

import (
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// monitor reports the requests that wait: every interval, one line per
// registry host whose requests moved no byte for at least that long
// (issue 13, point 9: a registry that accepts connections and never
// answers must not mean minutes of silence). It runs one timer per
// client, and only while requests are in flight.
type monitor struct {
	log   *slog.Logger
	clock Clock
	every time.Duration

	mu    sync.Mutex
	reqs  map[*inflight]struct{}
	timer Timer
	gen   int // generation of timer: a stale tick does nothing
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

func (m *monitor) tick(gen int) {
	m.mu.Lock()
	if gen != m.gen {
		m.mu.Unlock()
		return
	}
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
		if idle > w.waited {
			w.what, w.waited, w.total = f.what, idle, now.Sub(f.start)
			w.retries, w.of = f.budget.spent()-1, f.budget.policy.Attempts
		}
	}
	m.gen++
	gen = m.gen
	m.timer = m.clock.AfterFunc(m.every, func() { m.tick(gen) })
	m.mu.Unlock()
	hosts := make([]string, 0, len(byHost))
	for h := range byHost {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		w := byHost[h]
		m.log.Info("waiting for registry", "host", w.host, "request", w.what,
			"waited", w.waited.Round(time.Second).String(), "since", w.total.Round(time.Second).String(),
			"retries", max(w.retries, 0), "of", w.of, "waiting", w.n)
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

// LineLogger returns a logger writing one human line per record to w
// (slog's text format without the time, e.g. `level=INFO msg="waiting for
// registry" host=r.example.com …`), or nil for a nil w or io.Discard: a
// stand-in until the commands share one logger (issue 14, point 6).
func LineLogger(w io.Writer) *slog.Logger {
	if w == nil || w == io.Discard {
		return nil
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}
