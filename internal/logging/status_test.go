package logging

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
)

// fakeTerminal is a buffer that says it is a terminal of width columns and
// keeps every Write apart, so a test sees the sequence drawn.
type fakeTerminal struct {
	mu     sync.Mutex
	width  int
	writes []string
}

func (f *fakeTerminal) IsTerminal() bool { return true }
func (f *fakeTerminal) Width() int       { return f.width }
func (f *fakeTerminal) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, string(p))
	return len(p), nil
}

// take returns the writes since the last take.
func (f *fakeTerminal) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.writes
	f.writes = nil
	return w
}

func wantWrites(t *testing.T, got []string, want ...string) {
	t.Helper()
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("terminal got\n%q\nwant\n%q", got, want)
	}
}

// TestStatusRedraw: the status line is drawn, redrawn in place (back to
// column one, erase, the new text), erased when its part empties, and
// erased for good by Close.
func TestStatusRedraw(t *testing.T) {
	tty := &fakeTerminal{width: 80}
	s := NewStatus(tty, nil)
	p := s.Part()
	p.Set("⠋ waiting 1s for r.example.com: GET manifest a:v1")
	p.Set("⠙ waiting 2s for r.example.com: GET manifest a:v1")
	p.Set("⠙ waiting 2s for r.example.com: GET manifest a:v1") // unchanged: nothing drawn
	p.Set("")
	p.Set("⠹ waiting 1s for r.example.com: PUT blob a@sha256:0123")
	wantWrites(t, tty.take(),
		"⠋ waiting 1s for r.example.com: GET manifest a:v1",
		"\r\x1b[K⠙ waiting 2s for r.example.com: GET manifest a:v1",
		"\r\x1b[K",
		"⠹ waiting 1s for r.example.com: PUT blob a@sha256:0123",
	)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	p.Set("⠸ after the end")
	if _, err := s.Write([]byte("error: last line\n")); err != nil {
		t.Fatal(err)
	}
	wantWrites(t, tty.take(), "\r\x1b[K", "error: last line\n")
}

// TestStatusClearedBeforeLogLine: a log record while the status shows
// first erases it, then is written, then the status comes back below it,
// all in one Write, so the two never share a line.
func TestStatusClearedBeforeLogLine(t *testing.T) {
	tty := &fakeTerminal{width: 80}
	s := NewStatus(tty, nil)
	l := New(s, Options{})
	if StatusOf(l) != s {
		t.Fatal("StatusOf does not find the status of a text logger on it")
	}
	l.Info("no status yet")
	p := s.Part()
	p.Set("⠋ waiting 3s for r.example.com: HEAD manifest a:v1")
	l.Warn("registry request failed, retrying", "try", 2, "of", 5)
	p.Set("")
	l.Info("mirror: done")
	wantWrites(t, tty.take(),
		"no status yet\n",
		"⠋ waiting 3s for r.example.com: HEAD manifest a:v1",
		"\r\x1b[Kwarning: registry request failed, retrying try=2 of=5\n⠋ waiting 3s for r.example.com: HEAD manifest a:v1",
		"\r\x1b[K",
		"mirror: done\n",
	)
}

// TestStatusPartsAndWidth: parts show side by side in the order they were
// made, the line is cut one column short of the width (no wrap), and a
// write that stops inside a line keeps the status off until the line
// ends.
func TestStatusPartsAndWidth(t *testing.T) {
	tty := &fakeTerminal{width: 20}
	s := NewStatus(tty, nil)
	a, b := s.Part(), s.Part()
	b.Set("bbb")
	a.Set("aaa")
	a.Set("0123456789012345678901234")
	wantWrites(t, tty.take(), "bbb", "\r\x1b[Kaaa  bbb", "\r\x1b[K012345678901234567…")
	io.WriteString(s, "partial ")
	b.Set("ccc")
	io.WriteString(s, "line\n")
	wantWrites(t, tty.take(), "\r\x1b[Kpartial ", "line\n012345678901234567…")
}

// TestCarriageWriter: a bar drawn with carriage returns becomes a part of
// the status line; its final line ("\n") is written above the status as a
// normal line.
func TestCarriageWriter(t *testing.T) {
	tty := &fakeTerminal{width: 80}
	s := NewStatus(tty, nil)
	waiting := s.Part()
	bar := s.CarriageWriter()
	fmt.Fprintf(bar, "\rpush [==  ] 1 MiB / 2 MiB ")
	waiting.Set("⠋ waiting 1s")
	fmt.Fprintf(bar, "\rpush [====] 2 MiB / 2 MiB ")
	fmt.Fprintln(bar)
	waiting.Set("")
	wantWrites(t, tty.take(),
		"push [==  ] 1 MiB / 2 MiB",
		"\r\x1b[K⠋ waiting 1s  push [==  ] 1 MiB / 2 MiB",
		"\r\x1b[K⠋ waiting 1s  push [====] 2 MiB / 2 MiB",
		"\r\x1b[K⠋ waiting 1s",
		"\r\x1b[Kpush [====] 2 MiB / 2 MiB\n⠋ waiting 1s",
		"\r\x1b[K",
	)
}

// TestNotTerminal: a buffer or a file that is not a terminal gets no
// status (IsTerminal false), and a text logger on it has none.
func TestNotTerminal(t *testing.T) {
	var b bytes.Buffer
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(&b) || IsTerminal(f) || !IsTerminal(&fakeTerminal{}) {
		t.Error("IsTerminal is wrong")
	}
	if StatusOf(New(&b, Options{})) != nil || StatusOf(nil) != nil {
		t.Error("a status without a terminal")
	}
	// Quiet or JSON on a terminal: no status either.
	s := NewStatus(&fakeTerminal{}, nil)
	if StatusOf(New(s, Options{Level: Level(true, false)})) != nil || StatusOf(New(s, Options{Format: FormatJSON})) != nil {
		t.Error("a status with --quiet or --log-format json")
	}
}

// TestStatusConcurrent: parts set and lines logged from many goroutines
// (-race); every log line arrives whole.
func TestStatusConcurrent(t *testing.T) {
	tty := &fakeTerminal{width: 80}
	s := NewStatus(tty, nil)
	l := New(s, Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := s.Part()
			for j := range 50 {
				p.Set(fmt.Sprintf("part %d at %d", i, j))
				l.Info("line", "g", i, "n", j)
			}
			p.Set("")
		}()
	}
	wg.Wait()
	s.Close()
	lines := 0
	for _, w := range tty.take() {
		lines += strings.Count(w, "\n")
		if i := strings.Index(w, "\n"); i >= 0 && !strings.HasPrefix(strings.TrimPrefix(w, "\r\x1b[K"), "line g=") {
			t.Fatalf("a log line mixed with the status: %q", w)
		}
	}
	if lines != 8*50 {
		t.Errorf("%d lines, want %d", lines, 8*50)
	}
}
