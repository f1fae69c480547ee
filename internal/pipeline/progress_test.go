package pipeline

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestProgress: a long phase logs how far it is at most every 10 s of the
// run's clock and once at the end; a short one logs nothing.
func TestProgress(t *testing.T) {
	var log bytes.Buffer
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	o := &Options{Log: slog.New(slog.NewTextHandler(&log, nil)), Now: func() time.Time { return now }}

	short := o.newProgress("read", "versions read and linted", 3)
	for range 3 {
		short.step(false)
	}
	short.end()
	if log.Len() != 0 {
		t.Fatalf("a phase within 10 s logged:\n%s", log.String())
	}

	p := o.newProgress("read", "versions read and linted", 4)
	p.step(true)
	now = now.Add(9 * time.Second)
	p.step(false) // 9 s: no line yet
	now = now.Add(2 * time.Second)
	p.step(true) // 11 s: a line
	now = now.Add(time.Second)
	p.step(false) // the last item: the end says it
	p.end()
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines (at 11 s and the end), got:\n%s", log.String())
	}
	for i, want := range []string{"read: 3 of 4 versions read and linted, 2 from the lint cache, 11s", "read: 4 of 4 versions read and linted, 2 from the lint cache, 12s"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %q, want %q", i, lines[i], want)
		}
	}
}
