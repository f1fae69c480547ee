package pipeline

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/operator-publish/publish/internal/logging"
)

// discard is the logger of a run without one.
var discard = slog.New(slog.DiscardHandler)

// logf logs a progress line ("<stage>: ...") at level Info.
func (o *Options) logf(format string, args ...any) {
	o.logger().Info(fmt.Sprintf(format, args...))
}

// warnf logs, at level Warn, something the user may want to fix that does
// not stop the run.
func (o *Options) warnf(format string, args ...any) {
	o.logger().Warn(fmt.Sprintf(format, args...))
}

func (o *Options) logger() *slog.Logger {
	if o.Log == nil {
		return discard
	}
	return o.Log
}

// logWriter is the run's logger as a writer, for the stages that take one
// (internal/source/diff): each line is one record, Warn for a "warning: "
// line (the prefix, also after "<stage>: ", is dropped), else Info
// (logging.LineWriter).
func (o *Options) logWriter() io.Writer { return logging.Writer(o.logger()) }

// withCluster is l with the attribute cluster=name on every record, for
// the lines of one cluster of a run of several (nil stays nil).
func withCluster(l *slog.Logger, name string) *slog.Logger {
	if l == nil {
		return nil
	}
	return l.With("cluster", name)
}
