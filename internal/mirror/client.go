// Package mirror copies images from source registries to the destination
// registry with go-containerregistry: manifests as raw bytes so digests stay
// equal, image indexes whole, related images before bundles, signatures and
// referrers along, each blob once per run, through resets, rate limits and
// timeouts (the retry budget of internal/registry), failing fast on what
// cannot succeed.
package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/registry"
)

// Credentials is a registry user name and password (or token), or a
// keychain; the zero value means the docker config keychain
// (registry.Credentials).
type Credentials = registry.Credentials

// RetryPolicy bounds the retries of every registry operation
// (registry.RetryPolicy).
type RetryPolicy = registry.RetryPolicy

// PermanentError marks an error that retrying cannot fix
// (registry.PermanentError).
type PermanentError = registry.PermanentError

// Retryable reports whether a registry error may succeed when tried again
// (registry.Retryable).
func Retryable(err error) bool { return registry.Retryable(err) }

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
	// credentials by naming a registry of its own. nil: every registry
	// other than the destination; empty but not nil: none.
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
	// HTTP1 speaks HTTP/1.1 only (registry.Options.HTTP1; publish push).
	HTTP1 bool
	// PingOnce asks each registry for its auth challenge once per client
	// (registry.Options.PingOnce; publish push).
	PingOnce bool
	// Flags are the flag names of the command that runs, for the error
	// descriptions (zero value: registry.RunFlags).
	Flags registry.Flags
	// Logger receives the retries and, while a request waits, a line at
	// least every 10s (nil: discard). Clock drives the waits and those
	// lines (nil: the system clock).
	Logger *slog.Logger
	Clock  registry.Clock
	// SourceMirrors move the reads of source images to registries that
	// hold copies of them, the references staying as they are
	// (registry.SourceMirror; --source-mirror, publish.yaml sourceMirrors).
	SourceMirrors []registry.SourceMirror
}

// Client holds the transport and credentials for one run.
type Client struct {
	opts      Options
	dstHost   string
	dstPrefix string
	reg       *registry.Client
	sleep     func(context.Context, time.Duration) error // tests replace it

	conns sync.Map // side and registry string -> *regConn
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
	c := &Client{opts: o}
	flags := o.Flags
	if flags == (registry.Flags{}) {
		flags = registry.RunFlags
	}
	if o.DstRegistry != "" {
		d := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(o.DstRegistry, "https://"), "http://"), "/")
		host, prefix, _ := strings.Cut(d, "/")
		flag := flags.Registry
		if flag == "" {
			flag = "destination registry"
		}
		if _, err := name.NewRegistry(host, name.StrictValidation); err != nil || !registry.ValidHost(host) {
			return nil, fmt.Errorf("%s %q: want HOST[:PORT][/PREFIX], e.g. registry.example.com:5000/operators", flag, o.DstRegistry)
		}
		if prefix != "" {
			// Not StrictValidation: it wants docker.io/library/x for a
			// one-component docker.io path, but a prefix is never the
			// whole repository path.
			_, err := name.NewRepository(host + "/" + prefix)
			if err != nil || !registry.ValidPath(prefix) {
				return nil, fmt.Errorf("%s %q: prefix %q is not a valid repository path (lowercase letters, digits, '.', '_', '-', '/')", flag, o.DstRegistry, prefix)
			}
		}
		c.dstHost, c.dstPrefix = host, prefix
	}
	clock := o.Clock
	if clock == nil {
		clock = registry.SystemClock
	}
	c.sleep = func(ctx context.Context, d time.Duration) error { return registry.Sleep(ctx, clock, d) }
	reg, err := registry.New(registry.Options{
		CAFile: o.CAFile, Insecure: o.Insecure, PlainHTTP: o.PlainHTTP, PlainHTTPHosts: o.PlainHTTPHosts,
		HTTP1: o.HTTP1, PingOnce: o.PingOnce, Retry: o.Retry, Timeout: o.Timeout, MaxConnsPerHost: 2*o.Concurrency + 8,
		Src: o.Src, Dst: o.Dst, SrcHosts: o.SrcHosts, DstHost: c.dstHost, Flags: flags,
		Logger: o.Logger, Clock: clock, SourceMirrors: o.SourceMirrors,
		Sleep: func(ctx context.Context, d time.Duration) error { return c.sleep(ctx, d) },
	})
	if err != nil {
		return nil, err
	}
	c.reg = reg
	return c, nil
}

// Registry returns the registry client below c: transport, credentials,
// error descriptions.
func (c *Client) Registry() *registry.Client { return c.reg }

// DstHost returns the destination registry host[:port] (Artifact.spec.registry).
func (c *Client) DstHost() string { return c.dstHost }

// ParseReference parses an image reference with this client's naming
// options (plain HTTP when asked).
func (c *Client) ParseReference(ref string) (name.Reference, error) {
	return c.reg.ParseReference(ref)
}

// ReadReference parses a source reference and returns where it is read
// from: through the source mirrors (Options.SourceMirrors), else the
// reference itself (registry.Client.ReadReference). The reference given
// stays the name of the image everywhere else (Destination, records).
func (c *Client) ReadReference(ref string) (name.Reference, error) {
	return c.reg.ReadReference(ref)
}

// ReadRef is ReadReference as a string (registry.Client.ReadRef).
func (c *Client) ReadRef(ref string) string { return c.reg.ReadRef(ref) }

// Destination maps a source reference to the destination: the host is
// replaced by the destination host and the destination prefix is put before
// the repository path; the tag or digest is kept. docker.io short names get
// their full path (busybox -> library/busybox).
func (c *Client) Destination(src name.Reference) (name.Reference, error) {
	if c.dstHost == "" {
		return nil, fmt.Errorf("no destination registry: set %s", c.reg.Flags().Registry)
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

// neverRetry turns go-containerregistry's own retries off: the registry
// client's transport and Retry retry, within one budget per operation.
func neverRetry(error) bool { return false }

// SrcOptions returns the remote options for reading from source registries
// (bundle images, lint checks): the client's transport (TLS, timeouts,
// retries) and keychain.
func (c *Client) SrcOptions() []remote.Option {
	return c.reg.SideOptions(registry.Source)
}

// DstOptions returns the remote options for the destination registry.
func (c *Client) DstOptions() []remote.Option {
	return c.reg.SideOptions(registry.Destination, remote.WithJobs(c.opts.Concurrency))
}

// Describe wraps a registry error with what was being done, the host and
// what to do, naming the flags of the client's command
// (registry.Client.Describe; the side is the destination for its host).
func (c *Client) Describe(what, host string, err error) error {
	return c.reg.Describe(what, host, err)
}

// CheckDestination asks the destination, once, whether this client may push
// to the repository src maps to (go-containerregistry's
// remote.CheckPushPermission: it starts an upload and cancels it). A run
// calls it before mirroring so that a wrong password or an unreachable
// registry is one clear error, not one per image. The error is a
// *registry.Error (Op registry.OpCheckPush) that says what to do.
func (c *Client) CheckDestination(src string) error {
	ref, err := c.ParseReference(src)
	if err != nil {
		return err
	}
	dst, err := c.Destination(ref)
	if err != nil {
		return err
	}
	return c.reg.CheckPush(dst)
}

// retry runs op within one retry budget (registry.Client.Retry).
func (c *Client) retry(ctx context.Context, retries *atomic.Int64, op func(context.Context) error) error {
	return c.reg.Retry(ctx, retries, op)
}
