// Package logging builds the one logger of a publish invocation (log/slog):
// human text on stderr by default, JSON lines for machines (--log-format
// json), warnings and errors only (--quiet) or debug too (--verbose).
//
// Progress and diagnostics go to the logger; results go to stdout, never
// through it. Nothing here knows about secrets: callers never pass a
// credential as a message or an attribute (the CI log masks them besides).
package logging

import (
	"bytes"
	"context"
	"fmt"
	"github.com/operator-publish/publish/internal/redact"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// Format is how records are written.
type Format string

// The formats of --log-format.
const (
	// FormatText is one human line per record: the message, then any
	// attributes as key=value; warnings start "warning: ", errors
	// "error: ", debug lines "debug: "; no time stamp, no level for info
	// lines (TextHandler).
	FormatText Format = "text"
	// FormatJSON is one JSON object per line (slog.JSONHandler: time,
	// level, msg, attributes).
	FormatJSON Format = "json"
)

// ParseFormat returns the format named s ("text", "json"; "" is text).
// The error lists the formats.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case "", FormatText:
		return FormatText, nil
	case FormatJSON:
		return FormatJSON, nil
	}
	return "", fmt.Errorf("%q: want text or json", s)
}

// Level returns the lowest level logged: slog.LevelWarn when quiet
// (warnings and errors only), slog.LevelDebug when verbose, else
// slog.LevelInfo. Both at once is the caller's error to report.
func Level(quiet, verbose bool) slog.Level {
	switch {
	case quiet:
		return slog.LevelWarn
	case verbose:
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// Options configures New.
type Options struct {
	Format Format     // "" is FormatText
	Level  slog.Level // the lowest level written (Level); zero is Info
}

// New returns the logger writing to w (stderr, say) in o.Format. When w is
// the Status of a terminal, each text line first erases the live status
// line and draws it again below itself (see Status); StatusOf finds it
// back.
//
// A warning or error record is written once per logger (and the loggers
// derived from it): the same level, message and attributes again are
// dropped, so that a problem seen by two parts of a command, or by one
// part run twice, is said once. Info and debug records always pass.
func New(w io.Writer, o Options) *slog.Logger {
	if o.Format == FormatJSON {
		return slog.New(newOnce(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: o.Level, ReplaceAttr: redactAttr})))
	}
	return slog.New(newOnce(NewTextHandler(w, o.Level)))
}

// onceHandler passes records to next, dropping a warning or error record
// equal (level, message, attributes, those of WithAttrs and WithGroup
// included) to one passed before by it or a handler derived from it.
type onceHandler struct {
	next  slog.Handler
	scope string // the WithAttrs/WithGroup calls made, as text
	mu    *sync.Mutex
	seen  map[string]bool
}

func newOnce(next slog.Handler) *onceHandler {
	return &onceHandler{next: next, mu: &sync.Mutex{}, seen: map[string]bool{}}
}

// Enabled implements slog.Handler.
func (h *onceHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h *onceHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		var b bytes.Buffer
		fmt.Fprintf(&b, "%d\x00%s\x00%s", r.Level, h.scope, r.Message)
		r.Attrs(func(a slog.Attr) bool {
			appendAttr(&b, "", a)
			return true
		})
		k := b.String()
		h.mu.Lock()
		dup := h.seen[k]
		h.seen[k] = true
		h.mu.Unlock()
		if dup {
			return nil
		}
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h *onceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b bytes.Buffer
	for _, a := range as {
		appendAttr(&b, "", a)
	}
	h2 := *h
	h2.next, h2.scope = h.next.WithAttrs(as), h.scope+b.String()
	return &h2
}

// WithGroup implements slog.Handler.
func (h *onceHandler) WithGroup(name string) slog.Handler {
	h2 := *h
	h2.next, h2.scope = h.next.WithGroup(name), h.scope+"\x00group "+name
	return &h2
}

// redactAttr drops the user information of the URLs in the message and
// the string attributes of a JSON record (redact.Text); JSON escapes the
// control characters itself.
func redactAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindString {
		a.Value = slog.StringValue(redact.Text(a.Value.String()))
	}
	return a
}

// Discard returns a logger that writes nothing (tests, library defaults).
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TextHandler is the human slog.Handler: one line per record, the message
// as given but made safe to print (Clean: no URL user information, no
// control character, no line a CI would run as a command), then " key=value" per attribute (values quoted when they hold
// space or are empty; groups as "group.key"). Warnings start "warning: ",
// errors "error: ", debug lines "debug: "; info lines have no prefix, so
// they read as the progress lines publish always printed. No time stamp:
// CI logs stamp lines themselves. Safe for concurrent use; each record is
// one Write.
type TextHandler struct {
	mu     *sync.Mutex
	w      io.Writer
	level  slog.Leveler
	attrs  string // preformatted " k=v" of WithAttrs
	prefix string // group prefix "a.b."
}

// NewTextHandler returns a TextHandler writing records at level and above
// to w.
func NewTextHandler(w io.Writer, level slog.Leveler) *TextHandler {
	if level == nil {
		level = slog.LevelInfo
	}
	return &TextHandler{mu: &sync.Mutex{}, w: w, level: level}
}

// Enabled implements slog.Handler.
func (h *TextHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

// Prefix is the text a level's lines start with in FormatText: "debug: "
// below info, "" for info, "warning: " for warnings, "error: " for errors.
func Prefix(l slog.Level) string {
	switch {
	case l < slog.LevelInfo:
		return "debug: "
	case l < slog.LevelWarn:
		return ""
	case l < slog.LevelError:
		return "warning: "
	}
	return "error: "
}

// Handle implements slog.Handler.
func (h *TextHandler) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	b.WriteString(Prefix(r.Level))
	b.WriteString(Clean(r.Message))
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.prefix, a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(b.Bytes())
	return err
}

// WithAttrs implements slog.Handler.
func (h *TextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b bytes.Buffer
	for _, a := range as {
		appendAttr(&b, h.prefix, a)
	}
	h2 := *h
	h2.attrs += b.String()
	return &h2
}

// WithGroup implements slog.Handler.
func (h *TextHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.prefix += name + "."
	return &h2
}

func appendAttr(b *bytes.Buffer, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			appendAttr(b, p, g)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(prefix)
	b.WriteString(a.Key)
	b.WriteByte('=')
	v := redact.Text(a.Value.String())
	if v == "" || strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || r == '"' || r == '=' || !unicode.IsPrint(r) }) {
		v = strconv.Quote(v)
	}
	b.WriteString(v)
}

// LineWriter is an io.Writer that logs each line written to it as one
// record: for code that still takes an io.Writer for its progress lines.
// A line that starts "warning: " is logged at slog.LevelWarn and one that
// starts "error: " at slog.LevelError, without that prefix (the text
// handler puts it back), also after a stage ("diff: warning: x" is the
// warning "diff: x"); any other line at its Level. A last line without
// a newline waits for the next Write or Flush. Safe for concurrent use.
type LineWriter struct {
	Logger *slog.Logger
	Level  slog.Level // of lines without a prefix (zero: info)

	mu  sync.Mutex
	buf []byte
}

// Writer returns a LineWriter logging to l at slog.LevelInfo.
func Writer(l *slog.Logger) *LineWriter { return &LineWriter{Logger: l} }

// Write implements io.Writer: it never fails.
func (w *LineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) == 0 {
		w.buf = nil // let a long burst's array go
	}
	return len(p), nil
}

// Flush logs a pending partial line.
func (w *LineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = nil
	}
}

func (w *LineWriter) emit(line string) {
	line = strings.TrimRight(line, "\r")
	if strings.TrimSpace(line) == "" {
		return
	}
	level := w.Level
	stage, rest := "", line
	if s, r, ok := strings.Cut(line, ": "); ok && s != "" && !strings.Contains(s, " ") && (strings.HasPrefix(r, "warning: ") || strings.HasPrefix(r, "error: ")) {
		stage, rest = s+": ", r
	}
	if r, ok := strings.CutPrefix(rest, "warning: "); ok {
		level, line = slog.LevelWarn, stage+r
	} else if r, ok := strings.CutPrefix(rest, "error: "); ok {
		level, line = slog.LevelError, stage+r
	}
	w.Logger.Log(context.Background(), level, line)
}
