package main

import (
	"fmt"
	"os"
	"strings"

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
	git                                                 gitFlags
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
	o.Render = c.renderConfig()
	if loadedConfig != nil {
		o.Lint = loadedConfig.Lint
	}
	o.Mirror.DstRegistry, o.Mirror.PlainHTTP, o.Mirror.CAFile = c.dstRegistry, c.plainHTTP, r.caFile
	o.Mirror.Src, o.Mirror.Dst = r.src, r.dst
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
