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
}

func (l *logFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.formatName, "log-format", "text", "how progress, warnings and errors are written to stderr: text (lines for people) or json (one JSON object per line, for machines); results stay on stdout")
	fs.BoolVarP(&l.quiet, "quiet", "q", false, "log warnings and errors only")
	fs.BoolVarP(&l.verbose, "verbose", "v", false, "log debug lines too (where each setting came from, what is skipped)")
}

// logger checks the flags and returns the logger writing to w (stderr).
// Errors are usage errors naming the flag.
func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	f, err := logging.ParseFormat(l.formatName)
	if err != nil {
		return nil, usagef("--log-format %w", err)
	}
	if l.quiet && l.verbose {
		return nil, usagef("--quiet and --verbose exclude each other")
	}
	l.format = f
	return logging.New(w, logging.Options{Format: f, Level: logging.Level(l.quiet, l.verbose)}), nil
}
