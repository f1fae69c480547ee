package main

import (
	"os"
	"strings"
	"time"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/spf13/pflag"
)

// srcRegistryFlags are the credentials of the source registries and the
// hosts they may go to: --src-username, --src-password, --src-registry
// (publish.yaml srcRegistries:). Without --src-registry the credentials go
// to the registries the package manifests name (in a pull request: those
// the base revision's manifests name; docs/security.md).
type srcRegistryFlags struct {
	creds mirror.Credentials
	hosts []string
	// mirrors are --source-mirror FROM=TO (publish.yaml sourceMirrors),
	// for the commands that registerMirrors.
	mirrors []string
	// pinned: hosts are the only hosts, even when empty (a pull request's
	// base named no registry).
	pinned bool
}

func (s *srcRegistryFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.creds.Username, "src-username", "", "source registry user name (default: docker config)")
	fs.StringVar(&s.creds.Password, "src-password", "", "source registry password or token (sent to the --src-registry hosts only)")
	fs.StringSliceVar(&s.hosts, "src-registry", nil, "source registry HOST[:PORT] that may receive --src-username/--src-password (repeatable; default: the registries the package manifests name, in a pull request those of its base)")
	secret(fs, "src-password")
}

// registerMirrors adds --source-mirror (run, plan, lint, mirror, package).
func (s *srcRegistryFlags) registerMirrors(fs *pflag.FlagSet) {
	fs.StringSliceVar(&s.mirrors, "source-mirror", nil, "FROM=TO: read the images below the registry[/path] prefix FROM from TO (a central mirror holding copies), while manifests, records and the catalog keep FROM (repeatable; the longest FROM wins; TO gets --src-username/--src-password only when it is a --src-registry host, else the docker config's; default: publish.yaml sourceMirrors)")
}

// apply sets the source credentials, the source mirrors and, with
// --src-registry, the hosts the credentials go to. Errors are usage errors
// naming the flag.
func (s *srcRegistryFlags) apply(o *mirror.Options) error {
	o.Src = s.creds
	o.SourceMirrors = nil
	for _, v := range s.mirrors {
		m, err := registry.ParseSourceMirror(v)
		if err != nil {
			return usagef("--source-mirror %v", err)
		}
		o.SourceMirrors = append(o.SourceMirrors, m)
	}
	if len(s.hosts) == 0 && !s.pinned {
		return nil
	}
	o.SrcHosts = []string{}
	for _, h := range s.hosts {
		h = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(h), "https://"), "http://"), "/")
		if !registry.ValidHost(h) {
			return usagef("--src-registry %q: want HOST[:PORT] (a registry host, no path)", h)
		}
		o.SrcHosts = append(o.SrcHosts, h)
	}
	return nil
}

// dstRegistryFlags are the destination registry and its credentials:
// --dst-registry (violet: --dst-repo, --dest-repo), --dst-username
// (--username), --dst-password (--password).
type dstRegistryFlags struct {
	registry string
	creds    mirror.Credentials
	fs       *pflag.FlagSet
}

// register adds the flags; access says what the credentials need ("push
// access" for run, "read access" for plan).
func (d *dstRegistryFlags) register(fs *pflag.FlagSet, access string) {
	d.registerName(fs)
	d.registerCreds(fs, access)
}

// registerCreds adds the credentials alone (import: the bundles are read
// where the cluster's Artifacts say they are, no --dst-registry).
func (d *dstRegistryFlags) registerCreds(fs *pflag.FlagSet, access string) {
	d.fs = fs
	fs.StringVar(&d.creds.Username, "dst-username", "", "destination registry user name (default: docker config)")
	fs.StringVar(&d.creds.Password, "dst-password", "", "destination registry password or token ("+access+")")
	secret(fs, "dst-password")
	alias(fs, "dst-username", "username", false)
	alias(fs, "dst-password", "password", false)
}

// registerName adds --dst-registry alone (render: it names the
// destination of the references it renders, and talks to no registry).
func (d *dstRegistryFlags) registerName(fs *pflag.FlagSet) {
	d.fs = fs
	fs.StringVar(&d.registry, "dst-registry", "", "destination registry HOST[:PORT][/PREFIX]")
	alias(fs, "dst-registry", "dst-repo", false)
	alias(fs, "dst-registry", "dest-repo", false)
}

// require fails without a destination, naming the flag as typed.
func (d *dstRegistryFlags) require() error {
	if d.registry == "" {
		return usagef("--dst-registry HOST[:PORT][/PREFIX] is required")
	}
	return nil
}

// flag is the destination flag as the user spelled it (--dst-repo, say).
func (d *dstRegistryFlags) flag() string { return spelled(d.fs, "dst-registry") }

func (d *dstRegistryFlags) apply(o *mirror.Options) {
	o.DstRegistry, o.Dst = d.registry, d.creds
}

// tlsFlags are how registries are spoken to: --insecure, --ca-file (also
// for an HTTPS catalog), --plain-http (violet: --plain) and
// --plain-http-registry. --ca-file is registered here only.
type tlsFlags struct {
	insecure            bool
	caFile              string
	plainHTTP           bool
	plainHTTPRegistries []string
}

func (t *tlsFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&t.insecure, "insecure", false, "skip TLS certificate verification for the registries (HTTPS stays HTTPS; see --plain-http)")
	fs.StringVar(&t.caFile, "ca-file", "", "PEM file of extra CA certificates to trust (registries and an HTTPS catalog)")
	t.registerPlain(fs)
	fs.StringSliceVar(&t.plainHTTPRegistries, "plain-http-registry", nil, "registry HOST[:PORT] spoken to over plain HTTP, the others keep HTTPS (repeatable)")
}

// registerPlain adds --plain-http alone (render: it only changes how
// references are parsed).
func (t *tlsFlags) registerPlain(fs *pflag.FlagSet) {
	fs.BoolVar(&t.plainHTTP, "plain-http", false, "use plain HTTP for every registry")
	alias(fs, "plain-http", "plain", false)
}

// apply sets the registry transport options. Errors are usage errors
// naming the flag.
func (t *tlsFlags) apply(o *mirror.Options) error {
	if t.caFile != "" {
		if _, err := os.Stat(t.caFile); err != nil {
			return usagef("--ca-file: %w", err)
		}
	}
	o.Insecure, o.CAFile, o.PlainHTTP, o.PlainHTTPHosts = t.insecure, t.caFile, t.plainHTTP, t.plainHTTPRegistries
	return nil
}

// catalogCA returns the --ca-file certificates for an https:// catalog
// URL, nil otherwise.
func (t *tlsFlags) catalogCA(url string) ([]byte, error) {
	if t == nil || t.caFile == "" || !strings.HasPrefix(url, "https://") {
		return nil, nil
	}
	pem, err := os.ReadFile(t.caFile)
	if err != nil {
		return nil, usagef("--ca-file: %w", err)
	}
	return pem, nil
}

// retryFlags bound each registry request: --retries, --request-timeout.
type retryFlags struct {
	retries int
	timeout time.Duration
}

func (r *retryFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&r.retries, "retries", 5, "tries per registry operation on transient errors (resets, timeouts, 408, 429, 5xx); 1: no retry")
	fs.DurationVar(&r.timeout, "request-timeout", 60*time.Second, "per-request inactivity timeout: a registry request that moves no byte for this long is retried")
}

func (r *retryFlags) apply(o *mirror.Options) error {
	if r.retries < 1 {
		return usagef("--retries must be at least 1, not %d", r.retries)
	}
	if r.timeout <= 0 {
		return usagef("--request-timeout must be positive, not %v", r.timeout)
	}
	o.Retry.Attempts, o.Timeout = r.retries, r.timeout
	return nil
}

// copyFlags are how images are copied (run, mirror): --concurrency,
// --signatures, --allow-nondistributable. plan copies nothing and has
// none of them.
type copyFlags struct {
	concurrency           int
	signatures            bool
	allowNondistributable bool
}

func (c *copyFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&c.concurrency, "concurrency", 4, "registry operations in flight at once, for all images and blobs together (one budget for the whole copy; compare push --jobs)")
	registerSignatures(fs, &c.signatures, "copy cosign signature and attestation tags (sha256-<hex>.sig/.att) and OCI referrers with each image")
	fs.BoolVar(&c.allowNondistributable, "allow-nondistributable", false, "copy foreign (non-distributable) layers instead of failing the image")
}

// registerSignatures registers --signatures (on by default) into p: run
// and mirror copy the signatures with each image, package carries them in
// the archive.
func registerSignatures(fs *pflag.FlagSet, p *bool, usage string) {
	fs.BoolVar(p, "signatures", true, usage)
}

func (c *copyFlags) apply(o *mirror.Options) error {
	if c.concurrency < 1 {
		return usagef("--concurrency must be at least 1, not %d", c.concurrency)
	}
	o.Concurrency, o.SkipSignatures, o.AllowNondistributable = c.concurrency, !c.signatures, c.allowNondistributable
	return nil
}

// registryFlags are the groups of a command that talks to registries; nil
// groups are not registered for it. apply fills a mirror.Options from the
// groups present and checks it (mirror.New) as a usage error.
type registryFlags struct {
	src   *srcRegistryFlags
	dst   *dstRegistryFlags
	tls   *tlsFlags
	retry *retryFlags
	copy  *copyFlags
}

func (r *registryFlags) apply(o *mirror.Options) error {
	if r.src != nil {
		if err := r.src.apply(o); err != nil {
			return err
		}
	}
	if r.dst != nil {
		r.dst.apply(o)
	}
	if r.tls != nil {
		if err := r.tls.apply(o); err != nil {
			return err
		}
	}
	if r.retry != nil {
		if err := r.retry.apply(o); err != nil {
			return err
		}
	}
	if r.copy != nil {
		if err := r.copy.apply(o); err != nil {
			return err
		}
	}
	if _, err := mirror.New(*o); err != nil {
		return &usageError{r.rename(err)}
	}
	return nil
}

// rename makes an error of mirror.New name the destination flag as the
// user typed it.
func (r *registryFlags) rename(err error) error {
	if r.dst == nil || r.dst.flag() == "--dst-registry" {
		return err
	}
	return renamedError{err: err, from: "--dst-registry", to: r.dst.flag()}
}

// renamedError is err with one flag name replaced in its text.
type renamedError struct {
	err      error
	from, to string
}

func (e renamedError) Error() string { return strings.ReplaceAll(e.err.Error(), e.from, e.to) }
func (e renamedError) Unwrap() error { return e.err }
