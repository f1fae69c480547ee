package logging

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/term"
)

// Terminal control sequences of the status line: back to the first column
// and erase to the end of the line (ECMA-48 CR and EL; every terminal
// emulator docker, oras and crane draw on understands them).
const clearLine = "\r\x1b[K"

// IsTerminal reports whether w is a terminal: an *os.File whose descriptor
// is one (golang.org/x/term), or any writer with an IsTerminal() bool
// method that says so (a fake terminal in tests).
func IsTerminal(w io.Writer) bool {
	switch t := w.(type) {
	case interface{ IsTerminal() bool }:
		return t.IsTerminal()
	case *os.File:
		return term.IsTerminal(int(t.Fd()))
	}
	return false
}

// TerminalWidth returns the columns of terminal w: a Width() int method
// when w has one (tests), else the size of an *os.File's terminal
// (golang.org/x/term); 0 when unknown.
func TerminalWidth(w io.Writer) int {
	switch t := w.(type) {
	case interface{ Width() int }:
		return t.Width()
	case *os.File:
		if cols, _, err := term.GetSize(int(t.Fd())); err == nil {
			return cols
		}
	}
	return 0
}

// Status is the live status line of a terminal: one line at the bottom,
// redrawn in place ("\r", erase line, the text) as its parts change, and
// erased before anything else is written, so that log lines never mix
// with it. It is the io.Writer the text logger writes to on a terminal
// (New): each record clears the status, is written, and the status is
// drawn again below it. Parts (Part) are shown side by side in the order
// they were made, cut to the terminal's width so the line never wraps.
// Close erases it for good. Safe for concurrent use; each Write, redraw
// or erase is one Write to the terminal.
type Status struct {
	mu     sync.Mutex
	w      io.Writer
	width  func() int
	parts  []*StatusPart
	shown  string // the text on the screen ("" none)
	open   bool   // the last Write ended inside a line: draw nothing
	closed bool
}

// NewStatus returns the status line of terminal w; width, when not nil,
// returns its columns at the time of a redraw (0: unknown, 80 is
// assumed). w is written only by the Status from then on.
func NewStatus(w io.Writer, width func() int) *Status {
	if width == nil {
		width = func() int { return TerminalWidth(w) }
	}
	return &Status{w: w, width: width}
}

// StatusPart is one part of a Status (the waiting registry requests, a
// transfer's bar), set by its owner.
type StatusPart struct {
	s    *Status
	text string
}

// Part returns a new, empty part of the status line, shown after the
// parts made before it.
func (s *Status) Part() *StatusPart {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &StatusPart{s: s}
	s.parts = append(s.parts, p)
	return p
}

// Set replaces the part's text (one line: line breaks become spaces) and
// redraws the status line; "" hides the part, and the status line is
// erased when no part has text. Nothing is drawn after Close.
func (p *StatusPart) Set(text string) {
	text = strings.NewReplacer("\r", " ", "\n", " ").Replace(text)
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.text == text {
		return
	}
	p.text = text
	if s.closed || s.open {
		return
	}
	next := s.render()
	if next == s.shown {
		return
	}
	var b bytes.Buffer
	if s.shown != "" {
		b.WriteString(clearLine)
	}
	b.WriteString(next)
	s.shown = next
	_, _ = s.w.Write(b.Bytes())
}

// render returns the status line's text for now (s.mu held).
func (s *Status) render() string {
	var texts []string
	for _, p := range s.parts {
		if p.text != "" {
			texts = append(texts, p.text)
		}
	}
	line := strings.Join(texts, "  ")
	if line == "" {
		return ""
	}
	w := s.width()
	if w <= 0 {
		w = 80
	}
	// One column short of the width: a character in the last column
	// makes some terminals wrap, and "\r" would then erase only the
	// second row.
	if max := w - 1; utf8.RuneCountInString(line) > max {
		r := []rune(line)
		if max < 1 {
			return ""
		}
		line = string(r[:max-1]) + "…"
	}
	return line
}

// Write implements io.Writer: the status line is erased, p written, and
// the status drawn again when p ends a line (a write that stops inside a
// line leaves the status off until a later write ends it). The returned
// count is len(p), or 0 with the terminal's error.
func (s *Status) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b bytes.Buffer
	if s.shown != "" {
		b.WriteString(clearLine)
		s.shown = ""
	}
	b.Write(p)
	if len(p) > 0 {
		s.open = p[len(p)-1] != '\n'
	}
	if !s.closed && !s.open {
		s.shown = s.render()
		b.WriteString(s.shown)
	}
	if _, err := s.w.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close erases the status line for good: later Sets draw nothing and
// Writes go straight through. Call it when the command ends (before its
// last error is printed is fine: that goes through Write).
func (s *Status) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.shown == "" {
		return nil
	}
	s.shown = ""
	_, err := io.WriteString(s.w, clearLine)
	return err
}

// CarriageWriter returns a new part of s as an io.Writer for code that
// draws its own bar with carriage returns (archive.Progress with
// Terminal): the text after the last "\r" is the part's text, and a "\n"
// turns the text before it into a normal line above the status (the bar's
// final state stays on the screen, as on a terminal without a status).
func (s *Status) CarriageWriter() io.Writer { return &carriageWriter{part: s.Part()} }

type carriageWriter struct {
	part *StatusPart
	mu   sync.Mutex
	cur  []byte
}

func (c *carriageWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range p {
		switch ch {
		case '\r':
			c.cur = c.cur[:0]
		case '\n':
			line := strings.TrimRight(string(c.cur), " ")
			c.cur = c.cur[:0]
			c.part.Set("")
			if _, err := c.part.s.Write([]byte(line + "\n")); err != nil {
				return 0, err
			}
		default:
			c.cur = append(c.cur, ch)
		}
	}
	c.part.Set(strings.TrimRight(string(c.cur), " "))
	return len(p), nil
}

// StatusOf returns the Status that l writes to, or nil: l is a text
// logger made by New on a Status (a terminal) and logs info lines (not
// --quiet). Code that reports progress draws it there instead of logging
// lines when it gets one (internal/registry's waiting requests).
func StatusOf(l *slog.Logger) *Status {
	if l == nil {
		return nil
	}
	lh := l.Handler()
	if o, ok := lh.(*onceHandler); ok {
		lh = o.next
	}
	h, ok := lh.(*TextHandler)
	if !ok || !h.Enabled(context.Background(), slog.LevelInfo) {
		return nil
	}
	s, _ := h.w.(*Status)
	return s
}
