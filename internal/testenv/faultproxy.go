package testenv

import (
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fault is one kind of failure FaultProxy injects into a request.
type Fault string

// The faults, as real registries and the proxies in front of them produce
// them.
const (
	// FaultNone forwards the request untouched.
	FaultNone Fault = ""
	// FaultReset closes the client connection with a TCP RST before any
	// response (SO_LINGER 0): the client sees "connection reset by peer".
	FaultReset Fault = "reset"
	// FaultTooMany answers 429 Too Many Requests with Retry-After and the
	// distribution error code TOOMANYREQUESTS, without forwarding.
	FaultTooMany Fault = "429"
	// FaultUnavailable answers 503 Service Unavailable without forwarding.
	FaultUnavailable Fault = "503"
	// FaultSlow forwards the request after FaultOptions.SlowDelay.
	FaultSlow Fault = "slow"
	// FaultStall holds the request for FaultOptions.StallDelay (longer than
	// the client's timeout) before forwarding it.
	FaultStall Fault = "stall"
	// FaultTruncate forwards the request and sends only the first half of a
	// response body, with the full Content-Length, then closes the
	// connection. Only GET responses with a body are truncated.
	FaultTruncate Fault = "truncate"
)

// FaultOptions configures StartFaultProxy.
type FaultOptions struct {
	// Seed makes the sequence of faults repeatable.
	Seed uint64
	// Rates is the probability (0..1) of each fault per request; the sum
	// must not exceed 1.
	Rates map[Fault]float64
	// MaxPerKey bounds the faults injected into one request key (method and
	// path, with upload session IDs folded), so that a client that retries
	// a few times always gets through. 0: unbounded.
	MaxPerKey int
	// RetryAfter is the Retry-After of FaultTooMany, in whole seconds
	// (default 1).
	RetryAfter int
	// SlowDelay is the delay of FaultSlow (default 200ms); StallDelay the
	// delay of FaultStall (default 5s).
	SlowDelay, StallDelay time.Duration
	// Status, when it returns a status code other than 0 for a request,
	// answers that status (with a distribution error body) instead of
	// forwarding: a registry that denies (403) or fails a path.
	Status func(*http.Request) int
	// Listen is the address to listen on (default "127.0.0.1:0"; "[::1]:0"
	// for an IPv6 literal).
	Listen string
}

// Request is one request FaultProxy saw, with the fault it injected and the
// status it answered (0 for a reset, for a request the client gave up while
// it was held, and while the answer is not known yet).
type Request struct {
	Method, Path, Query string
	Fault               Fault
	Status              int
}

// FaultProxy is a reverse proxy in front of a registry that injects faults.
// Clients talk plain HTTP to it; it talks to the registry with the
// registry's transport (TLS when the registry has it). It is stopped by the
// test's cleanup.
type FaultProxy struct {
	// Host is "IP:PORT" ("[::1]:PORT" for IPv6), the registry part of image
	// references through the proxy.
	Host string

	target *url.URL
	rt     http.RoundTripper
	o      FaultOptions
	srv    *http.Server

	mu       sync.Mutex
	rnd      *rand.Rand
	perKey   map[string]int
	requests []*Request
	enabled  bool
}

var uploadID = regexp.MustCompile(`/blobs/uploads/[^/]+$`)

// StartFaultProxy starts a fault-injecting reverse proxy for the registry at
// target (e.g. Registry.URL()) that forwards with rt (e.g.
// Registry.Transport()). Faults are on from the start; SetFaults turns them
// on and off.
func StartFaultProxy(t testing.TB, target string, rt http.RoundTripper, o FaultOptions) *FaultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("testenv: fault proxy target %q: %v", target, err)
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = 1
	}
	if o.SlowDelay <= 0 {
		o.SlowDelay = 200 * time.Millisecond
	}
	if o.StallDelay <= 0 {
		o.StallDelay = 5 * time.Second
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	sum := 0.0
	for _, r := range o.Rates {
		sum += r
	}
	if sum > 1 {
		t.Fatalf("testenv: fault rates add up to %v > 1", sum)
	}
	p := &FaultProxy{target: u, rt: rt, o: o, rnd: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)), perKey: map[string]int{}, enabled: true}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		Skipf(t, "testenv: fault proxy cannot listen on %s: %v", o.Listen, err)
	}
	p.Host = ln.Addr().String()
	p.srv = &http.Server{Handler: p, ErrorLog: log.New(io.Discard, "", 0), ReadHeaderTimeout: 30 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		p.srv.Close()
		<-done
	})
	return p
}

// SetFaults turns fault injection on or off; requests are recorded either
// way.
func (p *FaultProxy) SetFaults(on bool) {
	p.mu.Lock()
	p.enabled = on
	p.mu.Unlock()
}

// Requests returns the requests seen so far, in arrival order. A request is
// recorded, with its fault, as it arrives, and its status before any of the
// answer is sent: a client that has its response, or its error, finds its
// request here.
func (p *FaultProxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Request, len(p.requests))
	for i, r := range p.requests {
		out[i] = *r
	}
	return out
}

// ResetRequests forgets the recorded requests (not the per-key fault
// counts).
func (p *FaultProxy) ResetRequests() {
	p.mu.Lock()
	p.requests = nil
	p.mu.Unlock()
}

// Count returns how many recorded requests match method (any when "") and
// whose path contains pathPart.
func (p *FaultProxy) Count(method, pathPart string) int {
	n := 0
	for _, r := range p.Requests() {
		if (method == "" || r.Method == method) && strings.Contains(r.Path, pathPart) {
			n++
		}
	}
	return n
}

// Faults counts the injected faults by kind.
func (p *FaultProxy) Faults() map[Fault]int {
	out := map[Fault]int{}
	for _, r := range p.Requests() {
		if r.Fault != FaultNone {
			out[r.Fault]++
		}
	}
	return out
}

func (p *FaultProxy) pick(r *http.Request) Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.enabled || len(p.o.Rates) == 0 {
		return FaultNone
	}
	key := r.Method + " " + uploadID.ReplaceAllString(r.URL.Path, "/blobs/uploads/*")
	if p.o.MaxPerKey > 0 && p.perKey[key] >= p.o.MaxPerKey {
		return FaultNone
	}
	x := p.rnd.Float64()
	// Fixed order so that a seed gives the same faults.
	for _, f := range []Fault{FaultReset, FaultTooMany, FaultUnavailable, FaultSlow, FaultStall, FaultTruncate} {
		rate := p.o.Rates[f]
		if x < rate {
			if f == FaultTruncate && r.Method != http.MethodGet {
				return FaultNone
			}
			p.perKey[key]++
			return f
		}
		x -= rate
	}
	return FaultNone
}

// arrive records r with the fault f as it arrives, its status not known
// yet; answered sets that status.
func (p *FaultProxy) arrive(r *http.Request, f Fault) *Request {
	req := &Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Fault: f}
	p.mu.Lock()
	p.requests = append(p.requests, req)
	p.mu.Unlock()
	return req
}

// answered records the status of req; call it before the answer is written.
func (p *FaultProxy) answered(req *Request, status int) {
	p.mu.Lock()
	req.Status = status
	p.mu.Unlock()
}

func registryError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"errors":[{"code":%q,"message":%q}]}`, code, msg)
}

// ServeHTTP implements http.Handler.
func (p *FaultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.o.Status != nil {
		if st := p.o.Status(r); st != 0 {
			p.answered(p.arrive(r, FaultNone), st)
			code := map[int]string{401: "UNAUTHORIZED", 403: "DENIED", 404: "NAME_UNKNOWN"}[st]
			if code == "" {
				code = "UNKNOWN"
			}
			registryError(w, st, code, http.StatusText(st))
			return
		}
	}
	f := p.pick(r)
	req := p.arrive(r, f)
	switch f {
	case FaultReset:
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic(http.ErrAbortHandler)
		}
		conn, _, err := hj.Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		conn.Close()
		return
	case FaultTooMany:
		p.answered(req, http.StatusTooManyRequests)
		w.Header().Set("Retry-After", strconv.Itoa(p.o.RetryAfter))
		registryError(w, http.StatusTooManyRequests, "TOOMANYREQUESTS", "rate limit exceeded (fault proxy)")
		return
	case FaultUnavailable:
		p.answered(req, http.StatusServiceUnavailable)
		registryError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "service unavailable (fault proxy)")
		return
	case FaultSlow, FaultStall:
		d := p.o.SlowDelay
		if f == FaultStall {
			d = p.o.StallDelay
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	p.forward(w, r, req)
}

// forward sends r to the registry and copies the answer; with
// FaultTruncate, only half of a body. It records the registry's status in
// req before it answers.
func (p *FaultProxy) forward(w http.ResponseWriter, r *http.Request, req *Request) {
	truncate := req.Fault == FaultTruncate
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.target.Scheme, p.target.Host
	out.Host = r.Host // the registry builds upload URLs for the proxy
	out.Header.Set("X-Forwarded-Proto", "http")
	if r.ContentLength == 0 {
		out.Body = nil
	}
	resp, err := p.rt.RoundTrip(out)
	if err != nil {
		p.answered(req, http.StatusBadGateway)
		registryError(w, http.StatusBadGateway, "UNAVAILABLE", "fault proxy: "+err.Error())
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			if k == "Location" {
				v = strings.Replace(v, p.target.Scheme+"://"+p.target.Host, "http://"+r.Host, 1)
			}
			w.Header().Add(k, v)
		}
	}
	p.answered(req, resp.StatusCode)
	w.WriteHeader(resp.StatusCode)
	if truncate && r.Method == http.MethodGet && resp.ContentLength > 1 {
		io.CopyN(w, resp.Body, resp.ContentLength/2)
		// Returning with fewer bytes than Content-Length makes the server
		// close the connection: the client reads an unexpected EOF.
		return
	}
	io.Copy(w, resp.Body)
}
