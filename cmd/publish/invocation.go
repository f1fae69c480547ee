package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/ci"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/logging"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/verify"
	"golang.org/x/term"
)

// invocation is the state of one run of the publish command: what main
// detected before anything was printed, what the flags and publish.yaml
// said, and the logger. Nothing of it is package-level, so that commands
// built in one test never see another's.
type invocation struct {
	// ci is the CI system publish runs in (internal/ci), detected first
	// thing in main so that secrets are masked before anything is
	// printed; nil: plain output (tests).
	ci ci.Env
	// masked holds the secrets already masked in the CI log, so each is
	// masked once.
	masked map[string]bool
	// config is the publish.yaml applied (nil: none).
	config *config.Config
	// fromConfig names the flags (canonical names) that publish.yaml set.
	fromConfig map[string]bool
	// verifier checks signatures against config's verify policy (nil: no
	// policy).
	verifier *verify.Verifier
	// log is the logger of the invocation (stderr); set before a
	// command's RunE runs, a text logger to stderr before that.
	log *slog.Logger
	// logFlags are the root's --log-format, --quiet and --verbose.
	logFlags logFlags
	// cmdline holds the flags given on the command line (canonical names;
	// an alias counts as its flag), set by applyEnv.
	cmdline map[string]bool
	// env, when set, replaces os.Getenv (tests).
	env func(string) string
}

// newInvocation returns the invocation for env (nil: plain output); the
// secrets already masked (ci.Detect masks the secret inputs) are known.
func newInvocation(env ci.Env, alreadyMasked ...string) *invocation {
	inv := &invocation{ci: env, masked: map[string]bool{}, log: logging.New(os.Stderr, logging.Options{})}
	for _, s := range alreadyMasked {
		inv.masked[s] = true
	}
	return inv
}

// mask hides a secret in the CI log, once.
func (inv *invocation) mask(secret string) {
	if inv.ci == nil || secret == "" || inv.masked[secret] {
		return
	}
	inv.masked[secret] = true
	inv.ci.Mask(secret)
}

// inCI reports whether publish runs in a CI system that annotates and
// summarises.
func (inv *invocation) inCI() bool { return inv.ci != nil && inv.ci.Name() != ci.None }

// imageVerifier is the verify policy of publish.yaml for the pipeline;
// a nil interface without one.
func (inv *invocation) imageVerifier() pipeline.ImageVerifier {
	if inv.verifier == nil {
		return nil
	}
	return inv.verifier
}

// lintConfig is the lint section of publish.yaml (severities, waivers);
// the zero value without one.
func (inv *invocation) lintConfig() lint.Config {
	if inv.config == nil {
		return lint.Config{}
	}
	return inv.config.Lint
}

// logWriter is the logger as an io.Writer, for code that takes one for its
// progress lines (archive.Progress): each line is one record ("warning: "
// lines are warnings).
func (inv *invocation) logWriter() io.Writer { return logging.Writer(inv.log) }

// logf logs a progress line (info) built with fmt.
func (inv *invocation) logf(format string, a ...any) { inv.log.Info(fmt.Sprintf(format, a...)) }

// warnf logs a warning built with fmt.
func (inv *invocation) warnf(format string, a ...any) { inv.log.Warn(fmt.Sprintf(format, a...)) }

// newProgress returns the progress reporter of a long read or upload: a
// bar on stderr when it is a terminal and the log is text (a part of the
// live status line when the logger has one, so that log lines and the
// waiting registry requests never mix with it), one line every 10 s
// through the logger otherwise; none with --quiet.
func (inv *invocation) newProgress(stderr io.Writer, label string) *archive.Progress {
	if inv.logFlags.quiet {
		return nil
	}
	if st := inv.logFlags.statusOf(stderr); st != nil {
		return &archive.Progress{Out: st.CarriageWriter(), Label: label, Terminal: true, Interval: defaultBarInterval}
	}
	if f, ok := stderr.(*os.File); ok && inv.logFlags.format != logging.FormatJSON && term.IsTerminal(int(f.Fd())) {
		return &archive.Progress{Out: stderr, Label: label, Terminal: true, Interval: defaultBarInterval}
	}
	return &archive.Progress{Out: inv.logWriter(), Label: label, Interval: defaultLineInterval}
}

// finish erases the terminal's live status line, if any: call it when the
// command returns, before its error is printed.
func (inv *invocation) finish() { inv.logFlags.closeStatus() }

// jobURL is the CI job's page (ci.JobURL), "" outside CI.
func (inv *invocation) jobURL() string { return ci.JobURL(inv.getenv) }
