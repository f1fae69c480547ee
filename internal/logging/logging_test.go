package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// TestText: the human lines read as publish's progress lines always did:
// no time stamp, no level for info, "warning: "/"error: " prefixes, and
// attributes as key=value.
func TestText(t *testing.T) {
	var b bytes.Buffer
	l := New(&b, Options{})
	l.Info("mirror: 3 package versions, 5 related images, 3 bundles to r.example.com")
	l.Warn("CI summary: disk full")
	l.Error("mirror failed:\nr/a:v1: 404")
	l.Debug("not shown at info")
	l.With("host", "r.example.com").WithGroup("req").Info("waiting", "what", "HEAD r/a:v1", "retries", 2, "note", "")
	want := "mirror: 3 package versions, 5 related images, 3 bundles to r.example.com\n" +
		"warning: CI summary: disk full\n" +
		"error: mirror failed:\nr/a:v1: 404\n" +
		"waiting host=r.example.com req.what=\"HEAD r/a:v1\" req.retries=2 req.note=\"\"\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestLevels(t *testing.T) {
	for _, tc := range []struct {
		quiet, verbose bool
		want           string
	}{
		{false, false, "info\nwarning: warn\nerror: error\n"},
		{true, false, "warning: warn\nerror: error\n"},
		{false, true, "debug: debug\ninfo\nwarning: warn\nerror: error\n"},
	} {
		var b bytes.Buffer
		l := New(&b, Options{Level: Level(tc.quiet, tc.verbose)})
		l.Debug("debug")
		l.Info("info")
		l.Warn("warn")
		l.Error("error")
		if b.String() != tc.want {
			t.Errorf("quiet %v verbose %v: got %q, want %q", tc.quiet, tc.verbose, b.String(), tc.want)
		}
	}
}

// TestJSON: one object per line with level and msg, for machines.
func TestJSON(t *testing.T) {
	var b bytes.Buffer
	l := New(&b, Options{Format: FormatJSON, Level: slog.LevelWarn})
	l.Info("dropped")
	l.Warn("retrying", "host", "r.example.com", "attempt", 2)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1:\n%s", len(lines), b.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["level"] != "WARN" || rec["msg"] != "retrying" || rec["host"] != "r.example.com" || rec["attempt"] != float64(2) {
		t.Errorf("record %v", rec)
	}
}

func TestParseFormat(t *testing.T) {
	for s, want := range map[string]Format{"": FormatText, "text": FormatText, "json": FormatJSON} {
		if got, err := ParseFormat(s); err != nil || got != want {
			t.Errorf("%q: %v %v", s, got, err)
		}
	}
	if _, err := ParseFormat("yaml"); err == nil || !strings.Contains(err.Error(), "text or json") {
		t.Errorf("yaml: %v", err)
	}
}

// TestLineWriter: code that writes progress lines to an io.Writer logs one
// record per line, split across writes or not; "warning: " lines become
// warnings (kept by --quiet), the rest info (dropped by --quiet).
func TestLineWriter(t *testing.T) {
	var b bytes.Buffer
	w := Writer(New(&b, Options{}))
	fmt.Fprint(w, "changes: 1 added")
	fmt.Fprint(w, ", 0 modified\nwarning: change detection failed\n\n")
	fmt.Fprint(w, "partial")
	if want := "changes: 1 added, 0 modified\nwarning: change detection failed\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	w.Flush()
	if !strings.HasSuffix(b.String(), "\npartial\n") {
		t.Errorf("flush: %q", b.String())
	}

	var q bytes.Buffer
	wq := Writer(New(&q, Options{Level: Level(true, false)}))
	fmt.Fprint(wq, "progress line\nwarning: kept\nerror: kept too\n")
	if want := "warning: kept\nerror: kept too\n"; q.String() != want {
		t.Errorf("quiet: got %q, want %q", q.String(), want)
	}
}

// TestConcurrent: records from many goroutines come out whole, one per
// line (go test -race checks the rest).
func TestConcurrent(t *testing.T) {
	var b syncBuffer
	l := New(&b, Options{})
	w := Writer(l)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				l.Info("record", "g", i, "n", j)
				fmt.Fprintf(w, "line %d %d\n", i, j)
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, "record g=") && !strings.HasPrefix(line, "line ") {
			t.Fatalf("torn line %q", line)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestErrorValue: an error attribute prints its text.
func TestErrorValue(t *testing.T) {
	var b bytes.Buffer
	New(&b, Options{}).Warn("CI output", "name", "changed", "err", errors.New("no space"))
	if want := "warning: CI output name=changed err=\"no space\"\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// TestWarningOnce: a warning (or error) said again in one invocation, by
// the same code run twice or by two parts that both see the problem, is
// written once in either format; info lines (progress) repeat; a warning
// with other attributes or other text is new. The live status still finds
// its text handler.
func TestWarningOnce(t *testing.T) {
	for _, f := range []Format{FormatText, FormatJSON} {
		var b bytes.Buffer
		l := New(&b, Options{Format: f})
		for range 2 {
			l.Warn("diff: base abc (state) is HEAD: nothing to compare")
			l.Info("scan: 3 package manifests")
			l.With("host", "r.example.com").Warn("slow registry")
			l.Error("r/a:v1: 404")
			NewLineWriterWarn(l, "warning: shallow clone\n")
		}
		l.With("host", "s.example.com").Warn("slow registry")
		out := b.String()
		for msg, want := range map[string]int{"nothing to compare": 1, "scan: 3": 2, "r.example.com": 1, "s.example.com": 1, "r/a:v1: 404": 1, "shallow clone": 1} {
			if n := strings.Count(out, msg); n != want {
				t.Errorf("%s: %q written %d times, want %d:\n%s", f, msg, n, want, out)
			}
		}
	}
	st := NewStatus(&bytes.Buffer{}, func() int { return 80 })
	if StatusOf(New(st, Options{})) != st {
		t.Error("StatusOf does not find the status behind the logger")
	}
}

// NewLineWriterWarn writes s through a LineWriter of l (as the code that
// still takes an io.Writer does).
func NewLineWriterWarn(l *slog.Logger, s string) {
	w := Writer(l)
	fmt.Fprint(w, s)
	w.Flush()
}
