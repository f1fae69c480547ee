package mirror

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/operator-publish/publish/internal/registry"
)

// regConn is the authenticated transport of one registry for a client:
// one /v2/ ping per registry and client, not one per repository or
// request. With bearer authentication (Harbor, Docker Hub, Quay) the token
// is fetched on the first request and its scope grows with each new
// repository (go-containerregistry's bearer transport).
type regConn struct {
	mu sync.Mutex
	tr http.RoundTripper // a *transport.Wrapper: go-containerregistry adds nothing to it
}

// schemeTransport sends requests for host with the scheme the ping found
// (go-containerregistry tries https before http for loopback and
// --plain-http registries).
type schemeTransport struct {
	host, scheme string
	inner        http.RoundTripper
}

func (s *schemeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == s.host && r.URL.Scheme != s.scheme {
		r = r.Clone(r.Context())
		r.URL.Scheme = s.scheme
	}
	return s.inner.RoundTrip(r)
}

// conn returns the authenticated transport for reg on side (the source
// credentials for reading a source, the destination's for the destination,
// even on one host), pinging it the first time. A failed ping is not
// cached: the next image tries again.
func (c *Client) conn(ctx context.Context, reg name.Registry, side registry.Side) (http.RoundTripper, error) {
	v, _ := c.conns.LoadOrStore(fmt.Sprint(side, " ", reg.String()), &regConn{})
	rc := v.(*regConn)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.tr != nil {
		return rc.tr, nil
	}
	if scheme, sure := c.schemeOf(reg); sure {
		// No ping: the scheme is known, credentials (if any) go with the
		// first request, and a bearer challenge is answered when it comes.
		auth, err := authn.Resolve(ctx, c.reg.SideKeychain(side), reg)
		if err != nil {
			return nil, err
		}
		base := &schemeTransport{host: reg.RegistryStr(), scheme: scheme, inner: c.reg.Transport()}
		lazy := &lazyBearer{reg: reg, auth: auth, base: base, insecure: scheme == "http"}
		tr, err := transport.FromToken(reg, auth, lazy, &transport.Challenge{Scheme: "basic", Insecure: scheme == "http"}, &transport.Token{})
		if err != nil {
			return nil, err
		}
		rc.tr = tr
		return tr, nil
	}
	var tr http.RoundTripper
	err := c.retry(ctx, nil, func(ctx context.Context) error {
		pr, err := transport.Ping(ctx, reg, c.reg.Transport())
		if err != nil {
			return err
		}
		auth, err := authn.Resolve(ctx, c.reg.SideKeychain(side), reg)
		if err != nil {
			return err
		}
		scheme := "https"
		if pr.Insecure {
			scheme = "http"
		}
		base := &schemeTransport{host: reg.RegistryStr(), scheme: scheme, inner: c.reg.Transport()}
		tr, err = transport.FromToken(reg, auth, base, pr, &transport.Token{})
		return err
	})
	if err != nil {
		return nil, err
	}
	rc.tr = tr
	return tr, nil
}

// remoteOpts returns the remote options for one operation on reg, on
// side, over its authenticated transport.
func (c *Client) remoteOpts(ctx context.Context, reg name.Registry, side registry.Side) ([]remote.Option, error) {
	tr, err := c.conn(ctx, reg, side)
	if err != nil {
		return nil, err
	}
	o := []remote.Option{remote.WithTransport(tr), remote.WithContext(ctx), remote.WithRetryPredicate(neverRetry)}
	if c.opts.AllowNondistributable {
		o = append(o, remote.WithNondistributable)
	}
	return o, nil
}

// schemeOf returns the scheme of reg when it is certain without a ping:
// http for registries given as plain HTTP (--plain-http,
// --plain-http-registry), https for the others, except loopback and
// private addresses, where go-containerregistry's ping tells HTTP from
// HTTPS.
func (c *Client) schemeOf(reg name.Registry) (string, bool) {
	if c.reg.PlainHTTP(reg.RegistryStr()) {
		return "http", true
	}
	if reg.Scheme() == "https" {
		return "https", true
	}
	return "", false
}

// lazyBearer sends requests as they are (with basic credentials, if any,
// from the transport above) until the registry answers 401 with a Bearer
// challenge; from then on it goes through go-containerregistry's bearer
// transport built from that challenge. It saves the /v2/ ping.
type lazyBearer struct {
	reg      name.Registry
	auth     authn.Authenticator
	base     http.RoundTripper
	insecure bool

	mu sync.Mutex
	bt http.RoundTripper
}

func (l *lazyBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	bt := l.bt
	l.mu.Unlock()
	if bt != nil {
		return bt.RoundTrip(r)
	}
	resp, err := l.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	scheme, params := parseChallenge(resp.Header.Get("WWW-Authenticate"))
	if !strings.EqualFold(scheme, "bearer") || (r.Body != nil && r.Body != http.NoBody && r.GetBody == nil) {
		return resp, nil
	}
	tr, err := transport.FromToken(l.reg, l.auth, l.base, &transport.Challenge{Scheme: "bearer", Parameters: params, Insecure: l.insecure}, &transport.Token{})
	if err != nil {
		return resp, nil
	}
	resp.Body.Close()
	l.mu.Lock()
	if l.bt == nil {
		l.bt = tr
	}
	bt = l.bt
	l.mu.Unlock()
	r2 := r.Clone(r.Context())
	r2.Header.Del("Authorization")
	if r.GetBody != nil {
		if r2.Body, err = r.GetBody(); err != nil {
			return nil, err
		}
	}
	return bt.RoundTrip(r2)
}

// parseChallenge parses a WWW-Authenticate header (RFC 9110 §11.6.1):
// the scheme and its auth-params, e.g. Bearer realm="https://auth.example.com/token",service="registry".
func parseChallenge(h string) (string, map[string]string) {
	h = strings.TrimSpace(h)
	scheme, rest, _ := strings.Cut(h, " ")
	params := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; {
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimLeft(v, " ")
		if strings.HasPrefix(v, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' && i+1 < len(v) {
					i++
				}
				b.WriteByte(v[i])
			}
			params[k] = b.String()
			rest = v[min(i+1, len(v)):]
		} else {
			val, after, _ := strings.Cut(v, ",")
			params[k] = strings.TrimSpace(val)
			rest = "," + after
			if after == "" {
				rest = ""
			}
		}
		rest = strings.TrimLeft(rest, " ,")
	}
	return scheme, params
}
