package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/spf13/pflag"
)

// remoteFlags are the catalog and registry flags run and plan share.
type remoteFlags struct {
	catalogURL, catalogBranch, catalogUser, catalogPass string
	caFile                                              string
	src, dst                                            mirror.Credentials
	mirror                                              mirrorFlags
	git                                                 gitFlags
}

// mirrorFlags are the registry transport and mirror flags of run, plan and
// mirror (internal/mirror Options).
type mirrorFlags struct {
	insecure              bool
	signatures            bool
	allowNondistributable bool
	plainHTTPRegistries   []string
	retries               int
	timeout               time.Duration
}

func (m *mirrorFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&m.insecure, "insecure", false, "skip TLS certificate verification for the registries (HTTPS stays HTTPS; see --plain-http)")
	fs.BoolVar(&m.signatures, "signatures", true, "copy cosign signature and attestation tags (sha256-<hex>.sig/.att) and OCI referrers with each image")
	fs.BoolVar(&m.allowNondistributable, "allow-nondistributable", false, "copy foreign (non-distributable) layers instead of failing the image")
	fs.StringSliceVar(&m.plainHTTPRegistries, "plain-http-registry", nil, "registry HOST[:PORT] spoken to over plain HTTP, the others keep HTTPS (repeatable)")
	fs.IntVar(&m.retries, "retries", 5, "tries per registry operation on transient errors (resets, timeouts, 408, 429, 5xx); 1: no retry")
	fs.DurationVar(&m.timeout, "request-timeout", 60*time.Second, "per-request inactivity timeout: a registry request that moves no byte for this long is retried")
}

// apply sets the mirror options from the flags. Errors are usage errors.
func (m *mirrorFlags) apply(o *mirror.Options) error {
	if m.retries < 1 {
		return &usageError{fmt.Errorf("--retries must be at least 1, not %d", m.retries)}
	}
	if m.timeout <= 0 {
		return &usageError{fmt.Errorf("--request-timeout must be positive, not %v", m.timeout)}
	}
	o.Insecure, o.SkipSignatures, o.AllowNondistributable = m.insecure, !m.signatures, m.allowNondistributable
	o.PlainHTTPHosts = m.plainHTTPRegistries
	o.Retry.Attempts, o.Timeout = m.retries, m.timeout
	return nil
}

// register adds the flags; access says what the catalog credentials need
// ("push" for run, "read" for plan).
func (r *remoteFlags) register(fs *pflag.FlagSet, access string) {
	fs.StringVar(&r.catalogURL, "catalog", "", "catalog Git repo: URL or local path")
	fs.StringVar(&r.catalogBranch, "catalog-branch", "main", "catalog branch")
	fs.StringVar(&r.catalogUser, "catalog-username", "", "user name for an HTTPS catalog repo")
	fs.StringVar(&r.catalogPass, "catalog-password", "", "password or token for an HTTPS catalog repo ("+access+" access)")
	fs.StringVar(&r.src.Username, "src-username", "", "source registry user name (default: docker config)")
	fs.StringVar(&r.src.Password, "src-password", "", "source registry password or token")
	fs.StringVar(&r.dst.Username, "dst-username", "", "destination registry user name (default: docker config)")
	fs.StringVar(&r.dst.Password, "dst-password", "", "destination registry password or token ("+access+" access)")
	r.git.register(fs)
	fs.StringVar(&r.caFile, "ca-file", "", "PEM file of extra CA certificates to trust (registries and an HTTPS catalog)")
	r.mirror.register(fs)
}

// apply checks the flags and fills the pipeline options common to run and
// plan. Errors are usage errors (exit 2).
func (r *remoteFlags) apply(c *commonFlags, o *pipeline.Options) error {
	if r.catalogURL == "" {
		return &usageError{fmt.Errorf("--catalog URL|PATH is required (the catalog Git repo)")}
	}
	if err := c.check(); err != nil {
		return err
	}
	o.Source, o.PackagesDir, o.Cluster = c.source, c.packagesDir, c.cluster
	o.Target, o.OLM = c.target, c.olmOptions()
	o.Render = c.renderConfig()
	if loadedConfig != nil {
		o.Lint = loadedConfig.Lint
	}
	o.Mirror.DstRegistry, o.Mirror.PlainHTTP, o.Mirror.CAFile = c.dstRegistry, c.plainHTTP, r.caFile
	o.Mirror.Src, o.Mirror.Dst = r.src, r.dst
	if err := r.mirror.apply(&o.Mirror); err != nil {
		return err
	}
	o.Catalog = gitops.Options{URL: r.catalogURL, Branch: r.catalogBranch, Username: r.catalogUser, Password: r.catalogPass}
	if err := r.git.apply(o); err != nil {
		return err
	}
	if r.caFile != "" && strings.HasPrefix(r.catalogURL, "https://") {
		pem, err := os.ReadFile(r.caFile)
		if err != nil {
			return &usageError{fmt.Errorf("--ca-file: %w", err)}
		}
		o.Catalog.CABundle = pem
	}
	if _, err := mirror.New(o.Mirror); err != nil {
		return &usageError{err}
	}
	return nil
}
