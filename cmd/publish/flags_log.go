package main

import (
	"io"
	"log/slog"
	"time"

	"github.com/operator-publish/publish/internal/logging"
	"github.com/spf13/pflag"
)

// Progress intervals: a bar on a terminal, a line in a CI log.
const (
	defaultBarInterval  = 200 * time.Millisecond
	defaultLineInterval = 10 * time.Second
)

// logFlags are the global flags of the logger: --log-format, --quiet,
// --verbose (persistent flags of the root command, so every command takes
// them).
type logFlags struct {
	formatName     string
	format         logging.Format
	quiet, verbose bool
	// status is the live status line of the terminal the text logger
	// writes to (nil: not a terminal, --log-format json or --quiet), made
	// once for statusOut.
	status    *logging.Status
	statusOut io.Writer
}

func (l *logFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.formatName, "log-format", "text", "how progress, warnings and errors are written to stderr: text (lines for people) or json (one JSON object per line, for machines); results stay on stdout")
	fs.BoolVarP(&l.quiet, "quiet", "q", false, "log warnings and errors only")
	fs.BoolVarP(&l.verbose, "verbose", "v", false, "log debug lines too (where each setting came from, what is skipped)")
}

// logger checks the flags and returns the logger writing to w (stderr).
// When w is a terminal (logging.IsTerminal) and the log is text and not
// --quiet, the logger writes through the terminal's live status line
// (logging.Status): the registry client draws the requests that wait
// there instead of logging a line every 10 s, and the status is erased
// before each log line. Errors are usage errors naming the flag.
func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	f, err := logging.ParseFormat(l.formatName)
	if err != nil {
		return nil, usagef("--log-format %w", err)
	}
	if l.quiet && l.verbose {
		return nil, usagef("--quiet and --verbose exclude each other")
	}
	l.format = f
	level := logging.Level(l.quiet, l.verbose)
	if f == logging.FormatText && level <= slog.LevelInfo && logging.IsTerminal(w) {
		if l.status == nil || l.statusOut != w {
			l.closeStatus()
			l.status, l.statusOut = logging.NewStatus(w, nil), w
		}
		return logging.New(l.status, logging.Options{Format: f, Level: level}), nil
	}
	l.closeStatus()
	return logging.New(w, logging.Options{Format: f, Level: level}), nil
}

// statusOf returns the live status line of terminal w made by logger,
// or nil.
func (l *logFlags) statusOf(w io.Writer) *logging.Status {
	if l.status == nil || l.statusOut != w {
		return nil
	}
	return l.status
}

// closeStatus erases the live status line for good (the command ended, or
// the logger no longer uses it); later lines go straight to the terminal.
func (l *logFlags) closeStatus() {
	if l.status != nil {
		_ = l.status.Close()
		l.status, l.statusOut = nil, nil
	}
}
