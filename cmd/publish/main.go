// Command publish publishes Kubernetes Operators from a Git repo of
// PackageManifests to a registry and a GitOps catalog repo. See README.md.
//
// Exit codes: 0 ok, 1 invalid input (fix the package repo, the overlay or
// the flags), 2 usage or infrastructure error (registry, Git, network),
// 130 or 143 interrupted by SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/operator-publish/publish/internal/ci"
	"github.com/operator-publish/publish/internal/logging"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/registry"
)

func main() {
	os.Exit(run())
}

func run() int {
	// Before anything is printed: in GitHub Actions this masks every secret
	// input and PUBLISH_*_PASSWORD.
	inv := newInvocation(ci.Detect(nil, os.Stdout), ci.Secrets(nil)...)
	ctx, stop := interruptible(context.Background())
	defer stop()
	err := newRoot(inv).ExecuteContext(ctx)
	inv.finish() // erase the live status line before the error
	if ie := interrupted(ctx); ie != nil {
		// Whatever the command returned (an error of the cancelled work,
		// or none), it did not finish: never exit 0.
		inv.log.Error(ie.Error())
		return ie.exitCode()
	}
	if err == nil {
		return 0
	}
	return inv.fail(err)
}

// fail logs the error of a command and returns its exit code.
func (inv *invocation) fail(err error) int {
	var le *pipeline.LintError
	if errors.As(err, &le) {
		// Findings carry their own severity; annotate them in CI too.
		if inv.logFlags.format == logging.FormatJSON {
			inv.log.Error(err.Error())
		} else {
			fmt.Fprintln(os.Stderr, logging.Clean(err.Error()))
		}
		if inv.inCI() {
			inv.ci.Annotate(le.Findings)
		}
	} else {
		inv.log.Error(err.Error())
	}
	return exitCode(err)
}

// exitCode is 2 for a usage error (a wrong flag, a wrong path), 1 for
// invalid input, 2 for anything else (registry, Git, network).
func exitCode(err error) int {
	var ie *pipeline.InputError
	var ue *usageError
	var pe *pipeline.PathError
	var fe *pipeline.FlagError
	var se *statusError
	switch {
	case errors.As(err, &se):
		return 1
	case errors.As(err, &ue), errors.As(err, &pe), errors.As(err, &fe):
		return 2
	case infrastructure(err):
		return 2
	case errors.As(err, &ie):
		return 1
	default:
		return 2
	}
}

// infrastructure reports whether err holds a registry failure that is not
// the input's fault: credentials or rights refused, a TLS setup to fix, a
// registry unreachable or too slow. It exits 2 even when a command wraps it
// as an input error; a registry answer that an image does not exist is the
// input's (exit 1 where the command says so).
func infrastructure(err error) bool {
	var re *registry.Error
	if !errors.As(err, &re) {
		return false
	}
	switch re.Kind {
	case registry.KindUnauthorized, registry.KindForbidden, registry.KindUnknownAuthority, registry.KindHostname,
		registry.KindCertificate, registry.KindTLS, registry.KindPlainHTTP, registry.KindUnreachable, registry.KindTimeout,
		registry.KindDigestMismatch, registry.KindLocalDisk:
		return true
	}
	return false
}
