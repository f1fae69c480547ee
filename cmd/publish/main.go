// Command publish publishes Kubernetes Operators from a Git repo of
// PackageManifests to a registry and a GitOps catalog repo. See README.md.
//
// Exit codes: 0 ok, 1 invalid input (fix the package repo, the overlay or
// the flags), 2 usage or infrastructure error (registry, Git, network).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/operator-publish/publish/internal/ci"
	"github.com/operator-publish/publish/internal/pipeline"
)

func main() {
	os.Exit(run())
}

func run() int {
	// Before anything is printed: in GitHub Actions this masks every secret
	// input and PUBLISH_*_PASSWORD.
	ciEnv = ci.Detect(nil, os.Stdout)
	for _, s := range ci.Secrets(nil) {
		masked[s] = true // Detect masked them already
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := newRootCmd()
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var le *pipeline.LintError
	if errors.As(err, &le) {
		// Findings carry their own severity; annotate them in CI too.
		fmt.Fprintln(os.Stderr, err)
		if ciEnv != nil && ciEnv.Name() != ci.None {
			ciEnv.Annotate(le.Findings)
		}
	} else {
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	var ie *pipeline.InputError
	var ue *usageError
	var pe *pipeline.PathError
	var fe *pipeline.FlagError
	switch {
	case errors.As(err, &ue), errors.As(err, &pe), errors.As(err, &fe):
		return 2
	case errors.As(err, &ie):
		return 1
	default:
		return 2
	}
}
