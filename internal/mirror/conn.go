package mirror

import (
	"context"
	"net/http"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
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

// conn returns the authenticated transport for reg, pinging it the first
// time. A failed ping is not cached: the next image tries again.
func (c *Client) conn(ctx context.Context, reg name.Registry) (http.RoundTripper, error) {
	v, _ := c.conns.LoadOrStore(reg.String(), &regConn{})
	rc := v.(*regConn)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.tr != nil {
		return rc.tr, nil
	}
	var tr http.RoundTripper
	err := c.retry(ctx, nil, func(ctx context.Context) error {
		pr, err := transport.Ping(ctx, reg, c.transport)
		if err != nil {
			return err
		}
		auth, err := authn.Resolve(ctx, c.keychain, reg)
		if err != nil {
			return err
		}
		scheme := "https"
		if pr.Insecure {
			scheme = "http"
		}
		base := &schemeTransport{host: reg.RegistryStr(), scheme: scheme, inner: c.transport}
		tr, err = transport.FromToken(reg, auth, base, pr, &transport.Token{})
		return err
	})
	if err != nil {
		return nil, err
	}
	rc.tr = tr
	return tr, nil
}

// remoteOpts returns the remote options for one operation on reg over its
// authenticated transport.
func (c *Client) remoteOpts(ctx context.Context, reg name.Registry) ([]remote.Option, error) {
	tr, err := c.conn(ctx, reg)
	if err != nil {
		return nil, err
	}
	o := []remote.Option{remote.WithTransport(tr), remote.WithContext(ctx), remote.WithRetryPredicate(neverRetry)}
	if c.opts.AllowNondistributable {
		o = append(o, remote.WithNondistributable)
	}
	return o, nil
}
