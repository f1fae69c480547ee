package archive

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fakeClock advances by step on every reading.
func fakeClock(step time.Duration) func() time.Time {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(step); return t }
}

func TestProgressLines(t *testing.T) {
	var out bytes.Buffer
	p := &Progress{Out: &out, Label: "push", Interval: 10 * time.Second, now: fakeClock(5 * time.Second)}
	p.Start(100 << 20)
	for range 4 {
		p.Add(25 << 20)
	}
	p.Done()
	got := out.String()
	if !strings.Contains(got, "push: 50.0 MiB of 100.0 MiB (50%), ") || !strings.Contains(got, "MiB/s, ETA ") || !strings.Contains(got, "push: 100.0 MiB in ") || strings.Contains(got, "\r") {
		t.Errorf("lines:\n%s", got)
	}
}

func TestProgressBar(t *testing.T) {
	var out bytes.Buffer
	p := &Progress{Out: &out, Label: "package", Terminal: true, Interval: time.Second, now: fakeClock(time.Second)}
	p.Start(10 << 20)
	p.Add(5 << 20)
	p.Done()
	got := out.String()
	if !strings.Contains(got, "\rpackage [===============               ] 5.0 MiB / 10.0 MiB") || !strings.Contains(got, "ETA") || !strings.HasSuffix(got, "\n") {
		t.Errorf("bar: %q", got)
	}
	var nilP *Progress
	nilP.Start(1)
	nilP.Add(1)
	nilP.Done()
}
