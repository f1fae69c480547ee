package archive

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress reports bytes done of a known total: on a terminal a bar
// redrawn in place (bytes, rate, ETA), elsewhere one plain line every
// Interval. A nil *Progress does nothing. It is an io.Writer counting what
// is written to it, and safe for concurrent use.
type Progress struct {
	// Out receives the bar or the lines (stderr, say).
	Out io.Writer
	// Terminal draws a bar with carriage returns instead of lines.
	Terminal bool
	// Label starts each line ("package", "push").
	Label string
	// Interval between plain lines (default 10 s) or bar redraws (200 ms).
	Interval time.Duration

	mu    sync.Mutex
	total int64
	done  int64
	start time.Time
	last  time.Time
	now   func() time.Time
}

// Start sets the total (bytes) and starts the clock.
func (p *Progress) Start(total int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.now == nil {
		p.now = time.Now
	}
	p.total, p.done = total, 0
	p.start = p.now()
	p.last = p.start
}

// Write counts len(b) bytes done.
func (p *Progress) Write(b []byte) (int, error) {
	p.Add(int64(len(b)))
	return len(b), nil
}

// Add counts n bytes done and reports when the interval has passed.
func (p *Progress) Add(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.now == nil {
		p.now = time.Now
		p.start, p.last = p.now(), p.now()
	}
	p.done += n
	iv := p.Interval
	if iv <= 0 {
		iv = 10 * time.Second
		if p.Terminal {
			iv = 200 * time.Millisecond
		}
	}
	if t := p.now(); t.Sub(p.last) >= iv {
		p.last = t
		p.print(false)
	}
}

// Done prints the final state (and ends the bar's line).
func (p *Progress) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.now == nil {
		return
	}
	p.print(true)
}

func (p *Progress) print(final bool) {
	if p.Out == nil {
		return
	}
	el := p.now().Sub(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(p.done) / el
	}
	eta := "?"
	if rate > 0 && p.total >= p.done {
		eta = time.Duration(float64(p.total-p.done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(p.done) / float64(p.total)
	}
	if p.Terminal {
		const width = 30
		fill := int(pct / 100 * width)
		if fill > width {
			fill = width
		}
		bar := strings.Repeat("=", fill) + strings.Repeat(" ", width-fill)
		fmt.Fprintf(p.Out, "\r%s [%s] %s / %s  %s/s  ETA %s ", p.Label, bar, Size(p.done), Size(p.total), Size(int64(rate)), eta)
		if final {
			fmt.Fprintln(p.Out)
		}
		return
	}
	if final {
		fmt.Fprintf(p.Out, "%s: %s in %.1fs (%s/s)\n", p.Label, Size(p.done), el, Size(int64(rate)))
		return
	}
	fmt.Fprintf(p.Out, "%s: %s of %s (%.0f%%), %s/s, ETA %s\n", p.Label, Size(p.done), Size(p.total), pct, Size(int64(rate)), eta)
}

// Size formats a byte count in binary units (KiB, MiB, GiB).
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
