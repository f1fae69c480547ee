package mirror

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	pubreg "github.com/operator-publish/publish/internal/registry"
)

// handClock is a registry.Clock whose time moves only when the test sets
// it; its timers never fire.
type handClock struct{ now time.Time }

func (c *handClock) Now() time.Time { return c.now }
func (c *handClock) AfterFunc(time.Duration, func()) pubreg.Timer {
	return time.AfterFunc(time.Hour, func() {})
}

// TestMirrorProgress: a copy of many images logs how far it is at most
// every 10 s of the client's clock and once at the end; a short one logs
// nothing.
func TestMirrorProgress(t *testing.T) {
	var log bytes.Buffer
	clock := &handClock{now: time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)}
	c, err := New(Options{Logger: slog.New(slog.NewTextHandler(&log, nil)), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	short := c.newProgress("bundles", 2)
	short.Step(false, false)
	short.Step(true, false)
	short.End()
	if log.Len() != 0 {
		t.Fatalf("a copy within 10 s logged:\n%s", log.String())
	}
	p := c.newProgress("related images", 4)
	p.Step(true, false)
	clock.now = clock.now.Add(9 * time.Second)
	p.Step(false, false) // 9 s: no line yet
	clock.now = clock.now.Add(2 * time.Second)
	p.Step(false, true) // 11 s: a line
	clock.now = clock.now.Add(time.Second)
	p.Step(false, false) // the last image: the end says it
	p.End()
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines (at 11 s and the end), got:\n%s", log.String())
	}
	for i, want := range []string{"mirror: 3 of 4 related images, 1 present already, 1 failed, 11s", "mirror: 4 of 4 related images, 1 present already, 1 failed, 12s"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %q, want %q", i, lines[i], want)
		}
	}
}
