package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// pingCache answers go-containerregistry's ping (GET /v2/ without
// credentials: the auth challenge, and whether the registry speaks HTTPS)
// once per scheme and host, and from then on with what the registry
// answered. go-containerregistry pings before it builds the transport of
// each repository, for a pusher and a puller each and again for each
// repository a blob is mounted from: a push to the 36 repositories of
// bench/archive pinged 99 times, each over HTTPS first on a plain-HTTP
// registry (a new connection that fails). Credentials and bearer tokens
// are still per repository, as before: only the unauthenticated
// challenge is shared. (The mirror keeps one connection per registry
// instead, mirror.Client.conn; a push's pusher and puller serve several
// registries at once, the OCI catalog's may be another.)
//
// A 200 or a 401 (the challenge) is kept, and so is the error of a
// request that failed (HTTPS to a plain-HTTP registry), unless it was
// cancelled (go-containerregistry races HTTPS and HTTP and cancels the
// loser). Anything else is passed on and asked again next time.
type pingCache struct {
	inner http.RoundTripper
	mu    sync.Mutex
	pings map[string]*ping // by scheme://host
}

// ping is one registry's answer: done is closed once it is known; keep
// says whether status and header, or err, are to be reused.
type ping struct {
	done   chan struct{}
	keep   bool
	status int
	header http.Header
	err    error
}

func isPing(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Path == "/v2/" && r.URL.RawQuery == "" && r.Header.Get("Authorization") == ""
}

func (c *pingCache) RoundTrip(r *http.Request) (*http.Response, error) {
	if !isPing(r) {
		return c.inner.RoundTrip(r)
	}
	key := r.URL.Scheme + "://" + r.URL.Host
	c.mu.Lock()
	p, asked := c.pings[key]
	if !asked {
		p = &ping{done: make(chan struct{})}
		c.pings[key] = p
	}
	c.mu.Unlock()
	if asked {
		select {
		case <-p.done:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
		if p.keep {
			return p.answer(r)
		}
		return c.inner.RoundTrip(r)
	}
	resp, err := c.inner.RoundTrip(r)
	switch {
	case err != nil:
		p.keep = r.Context().Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
		p.err = err
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized:
		p.keep, p.status, p.header = true, resp.StatusCode, resp.Header.Clone()
	}
	if !p.keep {
		c.mu.Lock()
		delete(c.pings, key) // the next caller asks again
		c.mu.Unlock()
	}
	close(p.done)
	return resp, err
}

// answer is the kept answer for r: the registry's status and headers, no
// body (go-containerregistry reads none from a 200 or 401 ping).
func (p *ping) answer(r *http.Request) (*http.Response, error) {
	if p.err != nil {
		return nil, p.err
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", p.status, http.StatusText(p.status)), StatusCode: p.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: p.header.Clone(), Body: http.NoBody, Request: r,
	}, nil
}
