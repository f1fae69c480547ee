package pipeline

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
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
// (internal/diff): each line is one record, Warn for a "warning: " line
// (the prefix, also after "<stage>: ", is dropped), else Info.
func (o *Options) logWriter() io.Writer { return &lineLogger{log: o.logger()} }

type lineLogger struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(l.buf[:i])
		l.buf = l.buf[i+1:]
		if stage, rest, ok := strings.Cut(line, "warning: "); ok && (stage == "" || strings.HasSuffix(stage, ": ") && !strings.Contains(strings.TrimSuffix(stage, ": "), " ")) {
			l.log.Warn(stage + rest)
			continue
		}
		l.log.Info(line)
	}
}

// withCluster is l with the attribute cluster=name on every record, for
// the lines of one cluster of a run of several (nil stays nil).
func withCluster(l *slog.Logger, name string) *slog.Logger {
	if l == nil {
		return nil
	}
	return l.With("cluster", name)
}
