// Package mirror copies images from source registries to the destination
// registry with go-containerregistry: manifests as raw bytes so digests stay
// equal, image indexes whole, related images before bundles, signatures and
// referrers along, each blob once per run, through resets, rate limits and
// timeouts (retry.go), failing fast on what cannot succeed.
package mirror

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Credentials is a registry user name and password (or token). The zero
// value means: use the docker config keychain (~/.docker/config.json,
// $DOCKER_CONFIG, credential helpers).
type Credentials struct {
	Username string
	Password string
}

func (c Credentials) set() bool { return c.Username != "" || c.Password != "" }

// Options configures registry access for both ends of a mirror.
type Options struct {
	// DstRegistry is HOST[:PORT][/PREFIX]: the destination registry and an
	// optional repository prefix (a Harbor project, say).
	DstRegistry string
	// PlainHTTP talks HTTP instead of HTTPS to every registry (violet --plain).
	PlainHTTP bool
	// Dst is sent to the destination host only; Src to the registries of
	// SrcHosts only. Unset (or any other registry): the docker config
	// keychain.
	Src, Dst Credentials
	// SrcHosts are the source registries (host[:port]) that may receive the
	// Src credentials: the hosts the package manifests name. A registry that
	// only a bundle's CSV names never gets them, so a bundle cannot collect
	// credentials by naming a registry of its own. Empty: every registry
	// other than the destination.
	SrcHosts []string
	// CAFile is a PEM file of extra CA certificates to trust (besides the
	// system pool) for both ends.
	CAFile string
	// Concurrency bounds the registry operations in flight at once, for all
	// images and all blobs together: manifest reads and writes, blob
	// uploads and mounts (default 4).
	Concurrency int
	// PlainHTTPHosts are registries (host[:port]) spoken to over plain HTTP
	// while the others keep HTTPS; PlainHTTP covers every registry.
	PlainHTTPHosts []string
	// Insecure skips TLS certificate verification for every registry
	// (HTTPS stays HTTPS; compare PlainHTTP).
	Insecure bool
	// SkipSignatures does not copy cosign signature and attestation tags
	// (sha256-<hex>.sig, .att) and OCI referrers (--signatures=false).
	SkipSignatures bool
	// AllowNondistributable copies foreign (non-distributable) layers to
	// the destination instead of failing the image.
	AllowNondistributable bool
	// Retry bounds the retries of every registry operation (zero value:
	// the defaults of RetryPolicy).
	Retry RetryPolicy
	// Timeout is the per-request inactivity timeout: a request is
	// abandoned (and retried) when no byte moves for this long (default
	// 60s).
	Timeout time.Duration
}

// Client holds the transport and credentials for one run.
type Client struct {
	opts      Options
	dstHost   string
	dstPrefix string
	transport http.RoundTripper // retrying, below authentication
	keychain  authn.Keychain
	policy    RetryPolicy
	plain     map[string]bool // PlainHTTPHosts
	sleep     func(context.Context, time.Duration) error

	conns sync.Map // registry string -> *regConn
}

// New validates o and returns a Client. Errors: a malformed DstRegistry, an
// unreadable or empty CAFile.
func New(o Options) (*Client, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	c := &Client{opts: o, policy: o.Retry.withDefaults(), sleep: sleepCtx, plain: map[string]bool{}}
	for _, h := range o.PlainHTTPHosts {
		h = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(h, "http://"), "https://"), "/")
		if !validHost(h) {
			return nil, fmt.Errorf("plain HTTP registry %q: want HOST[:PORT]", h)
		}
		c.plain[h] = true
	}
	if o.DstRegistry != "" {
		d := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(o.DstRegistry, "https://"), "http://"), "/")
		host, prefix, _ := strings.Cut(d, "/")
		if _, err := name.NewRegistry(host, name.StrictValidation); err != nil || !validHost(host) {
			return nil, fmt.Errorf("--dst-registry %q: want HOST[:PORT][/PREFIX], e.g. registry.example.com:5000/operators", o.DstRegistry)
		}
		if prefix != "" {
			// Not StrictValidation: it wants docker.io/library/x for a
			// one-component docker.io path, but a prefix is never the
			// whole repository path.
			_, err := name.NewRepository(host + "/" + prefix)
			if err != nil || !validPath(prefix) {
				return nil, fmt.Errorf("--dst-registry %q: prefix %q is not a valid repository path (lowercase letters, digits, '.', '_', '-', '/')", o.DstRegistry, prefix)
			}
		}
		c.dstHost, c.dstPrefix = host, prefix
	}
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = o.Timeout
	tr.MaxIdleConnsPerHost = 2*o.Concurrency + 8
	tls12 := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.Insecure {
		tls12.InsecureSkipVerify = true // --insecure: asked for explicitly
	}
	tr.TLSClientConfig = tls12
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", o.CAFile)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	c.transport = &retryTransport{inner: tr, policy: c.policy, timeout: o.Timeout, userAgent: userAgent, sleep: func(ctx context.Context, d time.Duration) error { return c.sleep(ctx, d) }}
	// Compare with the registry as go-containerregistry names it in
	// authn.Resource: docker.io is index.docker.io there.
	kc := &keychain{src: o.Src, dst: o.Dst}
	for _, h := range o.SrcHosts {
		reg, err := name.NewRegistry(h)
		if err != nil {
			return nil, fmt.Errorf("source registry %q: %w", h, err)
		}
		if kc.srcHosts == nil {
			kc.srcHosts = map[string]bool{}
		}
		kc.srcHosts[reg.RegistryStr()] = true
	}
	if c.dstHost != "" {
		reg, err := name.NewRegistry(c.dstHost)
		if err != nil {
			return nil, fmt.Errorf("--dst-registry %q: %w", o.DstRegistry, err)
		}
		kc.dstHost = reg.RegistryStr()
	}
	c.keychain = kc
	return c, nil
}

// The grammar of the distribution reference
// (github.com/distribution/reference): go-containerregistry checks only the
// characters, so that "a//b", "-a" or "host:1:2" would pass and fail later,
// image by image, at the registry.
var (
	domainComponent = regexp.MustCompile(`^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])$`)
	pathComponent   = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$`)
)

// validHost reports whether h is DOMAIN[:PORT] or [IPV6][:PORT].
func validHost(h string) bool {
	host, port := h, ""
	if strings.HasPrefix(h, "[") {
		end := strings.Index(h, "]")
		if end < 0 {
			return false
		}
		host, port = h[1:end], strings.TrimPrefix(h[end+1:], ":")
		if h[end+1:] != "" && !strings.HasPrefix(h[end+1:], ":") {
			return false
		}
		if ip := net.ParseIP(host); ip == nil || ip.To4() != nil {
			return false
		}
	} else {
		if i := strings.LastIndex(h, ":"); i >= 0 {
			host, port = h[:i], h[i+1:]
			if port == "" {
				return false
			}
		}
		if host == "" {
			return false
		}
		for _, c := range strings.Split(host, ".") {
			if !domainComponent.MatchString(c) {
				return false
			}
		}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return false
		}
	}
	return true
}

// validPath reports whether p is a repository path: components separated by
// single slashes.
func validPath(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if !pathComponent.MatchString(c) {
			return false
		}
	}
	return true
}

// DstHost returns the destination registry host[:port] (Artifact.spec.registry).
func (c *Client) DstHost() string { return c.dstHost }

// ParseReference parses an image reference with this client's naming
// options (plain HTTP when asked).
func (c *Client) ParseReference(ref string) (name.Reference, error) {
	var nopts []name.Option
	if c.opts.PlainHTTP {
		nopts = append(nopts, name.Insecure)
	} else if len(c.plain) > 0 {
		if r, err := name.ParseReference(ref); err == nil && c.plain[r.Context().RegistryStr()] {
			nopts = append(nopts, name.Insecure)
		}
	}
	return name.ParseReference(ref, nopts...)
}

// Destination maps a source reference to the destination: the host is
// replaced by the destination host and the destination prefix is put before
// the repository path; the tag or digest is kept. docker.io short names get
// their full path (busybox -> library/busybox).
func (c *Client) Destination(src name.Reference) (name.Reference, error) {
	if c.dstHost == "" {
		return nil, fmt.Errorf("no destination registry: set --dst-registry")
	}
	repo := src.Context().RepositoryStr()
	if c.dstPrefix != "" {
		repo = c.dstPrefix + "/" + repo
	}
	return c.ParseReference(c.dstHost + "/" + repo + refSuffix(src))
}

// DestinationRepository returns the repository path (no host, no tag) that
// src maps to at the destination: Artifact.spec.repository for a bundle.
func (c *Client) DestinationRepository(src name.Reference) string {
	repo := src.Context().RepositoryStr()
	if c.dstPrefix != "" {
		repo = c.dstPrefix + "/" + repo
	}
	return repo
}

func refSuffix(r name.Reference) string {
	switch r := r.(type) {
	case name.Digest:
		return "@" + r.DigestStr()
	case name.Tag:
		return ":" + r.TagStr()
	}
	return ""
}

// userAgent is sent with every registry request.
const userAgent = "operator-publish (go-containerregistry)"

// neverRetry turns go-containerregistry's own retries off: this client's
// transport and Client.retry retry, within one budget per operation.
func neverRetry(error) bool { return false }

// SrcOptions returns the remote options for reading from source registries
// (bundle images, lint checks): the client's transport (TLS, timeouts,
// retries) and keychain.
func (c *Client) SrcOptions() []remote.Option {
	return []remote.Option{remote.WithTransport(c.transport), remote.WithAuthFromKeychain(c.keychain), remote.WithRetryPredicate(neverRetry), remote.WithRetryStatusCodes()}
}

// DstOptions returns the remote options for the destination registry.
func (c *Client) DstOptions() []remote.Option {
	return []remote.Option{remote.WithTransport(c.transport), remote.WithAuthFromKeychain(c.keychain), remote.WithRetryPredicate(neverRetry), remote.WithRetryStatusCodes(), remote.WithJobs(c.opts.Concurrency)}
}

// keychain sends the destination credentials to the destination host, the
// source credentials to every other registry, and falls back to the docker
// config keychain when a side has none.
type keychain struct {
	dstHost  string
	srcHosts map[string]bool // nil: every host but the destination
	src, dst Credentials
}

func (k *keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	var creds Credentials
	switch {
	case r.RegistryStr() == k.dstHost:
		creds = k.dst
	case k.srcHosts == nil || k.srcHosts[r.RegistryStr()]:
		creds = k.src
	}
	if creds.set() {
		return authn.FromConfig(authn.AuthConfig{Username: creds.Username, Password: creds.Password}), nil
	}
	return authn.DefaultKeychain.Resolve(r)
}

// CheckDestination asks the destination, once, whether this client may push
// to the repository src maps to (go-containerregistry's
// remote.CheckPushPermission: it starts an upload and cancels it). A run
// calls it before mirroring so that a wrong password or an unreachable
// registry is one clear error, not one per image. The error says what to do
// (see Describe).
func (c *Client) CheckDestination(src string) error {
	ref, err := c.ParseReference(src)
	if err != nil {
		return err
	}
	dst, err := c.Destination(ref)
	if err != nil {
		return err
	}
	if err := remote.CheckPushPermission(dst, c.keychain, c.transport); err != nil {
		return Describe("checking push access to the destination", c.dstHost, err)
	}
	return nil
}
