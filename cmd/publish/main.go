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
	"runtime/debug"

	"github.com/operator-publish/publish/internal/ci"
	"github.com/operator-publish/publish/internal/errclass"
	"github.com/operator-publish/publish/internal/logging"
	"github.com/operator-publish/publish/internal/pipeline"
)

// defaultMemoryLimit is the Go runtime's soft memory limit of every
// command (runtime/debug.SetMemoryLimit) unless the environment sets one
// (GOMEMLIMIT): 1.5 GiB. Near it the garbage collector runs more often
// instead of letting the heap grow to twice what is live, so that a run over
// a whole catalog stays within a 2 GiB CI job (docs/commands.md#memory).
// It is soft: a command that needs more gets more.
const defaultMemoryLimit = 1536 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
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

// exitCode is the exit code of err's class (errclass.ClassOf): 1 for
// invalid input, 2 for a usage error (a wrong flag, a wrong path) and for
// anything else (registry, Git, network), a registry's refusal included
// even inside an input error.
func exitCode(err error) int {
	return errclass.ClassOf(err).ExitCode()
}
