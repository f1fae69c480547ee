// Package registry is the registry client every command shares: the HTTP
// transport (TLS roots, --insecure, plain-HTTP registries, HTTP/1 only),
// the retry budget and inactivity watchdog of every request (retry.go),
// the progress lines of requests that wait (progress.go), the credentials
// of each side (source, destination), and what registry errors mean
// (errors.go) and the platforms of an image index (platform.go), each
// defined once. It is built from Options by New; the copy engine
// (internal/mirror), bundle reads and lint use it through
// go-containerregistry's remote options. See docs/design.md.
package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Credentials are what one side (source or destination) authenticates
// with: a user name and password (or token), else Keychain, else the
// docker config keychain (~/.docker/config.json, $DOCKER_CONFIG,
// credential helpers).
type Credentials struct {
	Username string
	Password string
	// Keychain resolves the credentials when Username and Password are
	// empty; nil: authn.DefaultKeychain. Anonymous sends none.
	Keychain authn.Keychain
}

func (c Credentials) set() bool { return c.Username != "" || c.Password != "" }

// Anonymous is the keychain that sends no credentials at all (not even the
// docker config's): push --no-auth.
var Anonymous authn.Keychain = anonymous{}

type anonymous struct{}

func (anonymous) Resolve(authn.Resource) (authn.Authenticator, error) { return authn.Anonymous, nil }

// Options configures a Client. The zero value is a client for public
// HTTPS registries with the system roots and the docker config.
type Options struct {
	// CAFile is a PEM file of extra CA certificates to trust besides the
	// system pool (--ca-file). CAPool, when set, is the whole root pool
	// instead of the system pool (CAFile is added to it).
	CAFile string
	CAPool *x509.CertPool
	// Insecure skips TLS certificate verification (--insecure); HTTPS
	// stays HTTPS.
	Insecure bool
	// PlainHTTP speaks HTTP to every registry (--plain-http);
	// PlainHTTPHosts (host[:port]) to these only (--plain-http-registry).
	PlainHTTP      bool
	PlainHTTPHosts []string
	// HTTP1 speaks HTTP/1.1 only: concurrent blob uploads over one HTTP/2
	// connection can stall for good against some registries
	// (go-containerregistry issue #1210; seen with distribution 2.8 over
	// TLS). publish push sets it.
	HTTP1 bool
	// PingOnce asks each registry for its auth challenge (GET /v2/) once
	// per client instead of once per repository and operation
	// (pingCache); publish push sets it.
	PingOnce bool
	// Retry bounds the tries of every operation (zero: the defaults of
	// RetryPolicy).
	Retry RetryPolicy
	// Timeout is the inactivity timeout of one request: abandoned (and
	// retried) when no byte moves for this long (default 60s).
	Timeout time.Duration
	// MaxConnsPerHost sizes the idle connection pool per registry (default
	// 16).
	MaxConnsPerHost int
	// Src and Dst are the credentials of each side. Dst goes to DstHost
	// only; Src to the registries of SrcHosts only (nil: every registry
	// other than DstHost; empty but not nil: none), so that a bundle
	// cannot collect credentials by naming a registry of its own.
	Src, Dst Credentials
	SrcHosts []string
	// DstHost is the destination registry host[:port] ("" for none).
	DstHost string
	// Flags are the flag names of the command that runs, for the error
	// descriptions (zero value: RunFlags).
	Flags Flags
	// Logger receives a line per retry and, while a request waits, one
	// at least every ProgressInterval (nil: discard). When it is the text
	// logger of a terminal (logging.StatusOf: internal/logging.New on a
	// logging.Status, not quiet), the waiting requests are drawn on the
	// terminal's live status line instead of those lines, redrawn every
	// StatusInterval; retries stay lines.
	Logger *slog.Logger
	// ProgressInterval is how long a request may wait silently (default
	// 10s).
	ProgressInterval time.Duration
	// StatusInterval is how often the live status line is redrawn, and
	// how long a request must move no byte to show there (default 1s).
	StatusInterval time.Duration
	// Clock drives the watchdog, the backoffs and the progress lines
	// (nil: the system clock).
	Clock Clock
	// Sleep, when set, replaces the wait before a retry (tests record the
	// waits); nil: wait on Clock.
	Sleep func(context.Context, time.Duration) error
	// UserAgent is sent with every request (default "operator-publish
	// (go-containerregistry)").
	UserAgent string
	// SourceMirrors move the reads of source images to the registries
	// that hold copies of them (ReadReference; --source-mirror).
	SourceMirrors []SourceMirror
}

// Client is the registry access of one run: safe for concurrent use.
type Client struct {
	opts      Options
	policy    RetryPolicy
	plain     map[string]bool
	dstReg    string // DstHost as go-containerregistry names it ("" none)
	transport *retryTransport
	rt        http.RoundTripper // transport, or a pingCache around it
	keychain  *keychain
	log       *slog.Logger
	clock     Clock
	mon       *monitor
	mirrors   sourceMirrors
}

// New validates o and returns a Client. Errors name the flags of
// o.Flags: an unreadable CAFile or one without a PEM certificate, a
// malformed plain-HTTP or source host.
func New(o Options) (*Client, error) {
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.MaxConnsPerHost <= 0 {
		o.MaxConnsPerHost = 16
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = 10 * time.Second
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = time.Second
	}
	if o.UserAgent == "" {
		o.UserAgent = "operator-publish (go-containerregistry)"
	}
	if o.Flags == (Flags{}) {
		o.Flags = RunFlags
	}
	if o.Clock == nil {
		o.Clock = SystemClock
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{opts: o, policy: o.Retry.withDefaults(), plain: map[string]bool{}, log: log, clock: o.Clock}
	for _, h := range o.PlainHTTPHosts {
		h = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(h, "http://"), "https://"), "/")
		if !ValidHost(h) {
			return nil, fmt.Errorf("plain HTTP registry %q: want HOST[:PORT]", h)
		}
		c.plain[h] = true
	}
	tr, err := c.httpTransport()
	if err != nil {
		return nil, err
	}
	if o.Logger != nil {
		c.mon = newMonitor(log, o.Clock, o.ProgressInterval, o.StatusInterval)
	}
	c.transport = &retryTransport{inner: tr, policy: c.policy, timeout: o.Timeout, userAgent: o.UserAgent, sleep: c.sleep, clock: o.Clock, log: log, mon: c.mon}
	c.rt = c.transport
	if o.PingOnce {
		c.rt = &pingCache{inner: c.transport, pings: map[string]*ping{}}
	}
	kc := &keychain{src: o.Src, dst: o.Dst}
	if o.SrcHosts != nil {
		kc.srcHosts = map[string]bool{} // an empty list: no host
	}
	for _, h := range o.SrcHosts {
		reg, err := name.NewRegistry(h)
		if err != nil {
			return nil, fmt.Errorf("source registry %q: %w", h, err)
		}
		kc.srcHosts[reg.RegistryStr()] = true
	}
	if o.DstHost != "" {
		reg, err := name.NewRegistry(o.DstHost)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", o.Flags.registry(), o.DstHost, err)
		}
		kc.dstHost = reg.RegistryStr()
		c.dstReg = reg.RegistryStr()
	}
	c.keychain = kc
	if c.mirrors, err = newSourceMirrors(o.SourceMirrors); err != nil {
		return nil, err
	}
	return c, nil
}

// httpTransport is go-containerregistry's default transport with the TLS
// settings of the options.
func (c *Client) httpTransport() (*http.Transport, error) {
	o := c.opts
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = o.Timeout
	tr.MaxIdleConnsPerHost = o.MaxConnsPerHost
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.CAPool}
	if o.Insecure {
		cfg.InsecureSkipVerify = true // --insecure: asked for explicitly
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Flags.ca(), err)
		}
		pool := o.CAPool
		if pool == nil {
			if pool, err = x509.SystemCertPool(); err != nil || pool == nil {
				pool = x509.NewCertPool()
			}
		} else {
			pool = pool.Clone()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s %s: no PEM certificate in it", o.Flags.ca(), o.CAFile)
		}
		cfg.RootCAs = pool
	}
	if o.HTTP1 {
		tr.ForceAttemptHTTP2 = false
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		cfg.NextProtos = []string{"http/1.1"}
	}
	tr.TLSClientConfig = cfg
	return tr, nil
}

// Flags returns the flag names the client's errors use.
func (c *Client) Flags() Flags { return c.opts.Flags }

// Transport returns the client's HTTP transport: TLS, user agent,
// inactivity watchdog, retries within the operation's budget (see Retry),
// progress lines. It sits below go-containerregistry's authentication.
func (c *Client) Transport() http.RoundTripper { return c.rt }

// Keychain returns the keychain of both sides by host alone (see
// Options.Src): the destination's credentials for its host, the source's
// for the others. Reads and writes know their side: they take
// SideKeychain, so that a source on the destination's host is read with
// the source credentials.
func (c *Client) Keychain() authn.Keychain { return c.keychain }

// SideKeychain returns the keychain of one side: for Source, the source
// credentials on the source hosts (Options.SrcHosts; nil: every host, the
// destination's too) and the docker config elsewhere; for Destination,
// the destination credentials on the destination host and the docker
// config elsewhere. Neither side's credentials are ever sent for the
// other's operations, whatever the host.
func (c *Client) SideKeychain(s Side) authn.Keychain { return sideKeychain{k: c.keychain, side: s} }

// SideOptions is Options with the keychain of side s.
func (c *Client) SideOptions(s Side, extra ...remote.Option) []remote.Option {
	return append(c.Options(remote.WithAuthFromKeychain(c.SideKeychain(s))), extra...)
}

// Policy returns the retry policy with its defaults filled in.
func (c *Client) Policy() RetryPolicy { return c.policy }

// Logger returns the client's logger (never nil).
func (c *Client) Logger() *slog.Logger { return c.log }

// PlainHTTP reports whether reg (host[:port]) is spoken to over plain HTTP
// (Options.PlainHTTP or PlainHTTPHosts).
func (c *Client) PlainHTTP(reg string) bool { return c.opts.PlainHTTP || c.plain[reg] }

// ParseReference parses an image reference with the client's naming
// options: plain HTTP for the registries given as such. Every reference is
// checked against the distribution grammar first (CheckReference): no
// empty, "." or ".." path component can reach a registry.
func (c *Client) ParseReference(ref string) (name.Reference, error) {
	if err := CheckReference(ref); err != nil {
		return nil, fmt.Errorf("image reference %q: %w", ref, err)
	}
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

// neverRetry turns go-containerregistry's own retries off: the client's
// transport and Retry retry, within one budget per operation.
func neverRetry(error) bool { return false }

// Options returns the remote options of the client: its transport and
// keychain, go-containerregistry's own retries off, and extra after them.
func (c *Client) Options(extra ...remote.Option) []remote.Option {
	return append([]remote.Option{remote.WithTransport(c.rt), remote.WithAuthFromKeychain(c.keychain), remote.WithRetryPredicate(neverRetry), remote.WithRetryStatusCodes()}, extra...)
}

// CheckPush asks the registry of dst, once, whether the client may push
// to dst's repository (go-containerregistry's remote.CheckPushPermission:
// it starts an upload and cancels it). The error is an *Error for
// OpCheckPush.
func (c *Client) CheckPush(dst name.Reference) error {
	if err := remote.CheckPushPermission(dst, c.SideKeychain(Destination), c.rt); err != nil {
		return c.Describe(OpCheckPush, dst.Context().RegistryStr(), err)
	}
	return nil
}

// sleep waits d before a retry (Options.Sleep, else on the clock).
func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.opts.Sleep != nil {
		return c.opts.Sleep(ctx, d)
	}
	return Sleep(ctx, c.clock, d)
}

// keychain sends the destination credentials to the destination host, the
// source credentials to the source hosts, and falls back to each side's
// keychain (else the docker config) when a side has no user name and
// password.
type keychain struct {
	dstHost  string
	srcHosts map[string]bool // nil: every host but the destination
	src, dst Credentials
}

func (k *keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	var creds Credentials
	switch {
	case k.dstHost != "" && r.RegistryStr() == k.dstHost:
		creds = k.dst
	case k.srcHosts == nil || k.srcHosts[r.RegistryStr()]:
		creds = k.src
	}
	return creds.resolve(r)
}

// sideKeychain is the keychain of one side (Client.SideKeychain).
type sideKeychain struct {
	k    *keychain
	side Side
}

func (s sideKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	var creds Credentials
	host := r.RegistryStr()
	switch s.side {
	case Destination:
		if s.k.dstHost != "" && host == s.k.dstHost {
			creds = s.k.dst
		}
	default:
		if s.k.srcHosts == nil || s.k.srcHosts[host] {
			creds = s.k.src
		}
	}
	return creds.resolve(r)
}

// resolve is the authenticator of creds for r: the user name and password
// when set, else creds' keychain, else the docker config.
func (creds Credentials) resolve(r authn.Resource) (authn.Authenticator, error) {
	if creds.set() {
		return authn.FromConfig(authn.AuthConfig{Username: creds.Username, Password: creds.Password}), nil
	}
	if creds.Keychain != nil {
		return creds.Keychain.Resolve(r)
	}
	return authn.DefaultKeychain.Resolve(r)
}

// Retry runs op until it succeeds, fails for good (see Retryable), or the
// budget of the policy is spent; the budget travels in the context, so
// the requests the transport repeats count against it, and operations
// nested in op share it. retries, when not nil, counts the retries. Each
// retry is logged. Errors: *PermanentError (retrying cannot help), an
// exhausted budget (Retryable reports false for it), or the last error
// when ctx ended.
func (c *Client) Retry(ctx context.Context, retries *atomic.Int64, op func(context.Context) error) error {
	b := budgetFrom(ctx)
	if b == nil {
		b = &budget{policy: c.policy, retries: retries}
		ctx = context.WithValue(ctx, budgetKey{}, b)
	}
	for {
		b.start()
		err := op(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		var ex *exhaustedError
		if errors.As(err, &ex) {
			return err // a nested operation spent the shared budget
		}
		if !Retryable(err) {
			return &PermanentError{Err: err}
		}
		wait, ok, werr := b.next()
		if !ok {
			if werr != nil {
				return &exhaustedError{fmt.Errorf("%w; %v", err, werr)}
			}
			return &exhaustedError{fmt.Errorf("%w (gave up after %d tries)", err, b.spent())}
		}
		c.log.Warn("registry operation failed, retrying", "error", err.Error(), "try", b.spent(), "of", c.policy.Attempts, "wait", wait.Round(time.Millisecond).String())
		if serr := c.sleep(ctx, wait); serr != nil {
			return err
		}
	}
}
