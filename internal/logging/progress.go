package logging

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// ProgressEvery is how often a long phase logs how far it is.
const ProgressEvery = 10 * time.Second

// Progress logs how far a phase over many items is, as one Info line
// through logf ("read: 1200 of 7018 versions read and linted, 1150 from
// the lint cache, 40s"): at most every ProgressEvery of now's clock, when
// an item ends, and once more at the end when it logged before, so that a
// phase that ends within ProgressEvery logs nothing. Each label counts the
// items Step marked with it and is shown when not zero. Safe for
// concurrent use (the goroutines doing the items report).
type Progress struct {
	logf        func(format string, args ...any)
	now         func() time.Time
	stage, what string
	labels      []string
	total       int
	start, last time.Time

	mu     sync.Mutex
	done   int
	counts []int
	logged bool
}

// NewProgress starts the progress of a phase of stage ("read") over total
// items named what ("versions read"), its lines to logf, its time from
// now, counting the items marked with each of labels ("from the lint
// cache").
func NewProgress(logf func(string, ...any), now func() time.Time, stage, what string, total int, labels ...string) *Progress {
	t := now()
	return &Progress{logf: logf, now: now, stage: stage, what: what, labels: labels, total: total, start: t, last: t, counts: make([]int, len(labels))}
}

// Step records one item done; marks[i] counts it under the i-th label. It
// logs when ProgressEvery passed since the last line.
func (p *Progress) Step(marks ...bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	for i, m := range marks {
		if m && i < len(p.counts) {
			p.counts[i]++
		}
	}
	if now := p.now(); now.Sub(p.last) >= ProgressEvery && p.done < p.total {
		p.last, p.logged = now, true
		p.line(now)
	}
}

// End logs the last line when the phase logged before.
func (p *Progress) End() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.logged {
		p.line(p.now())
	}
}

func (p *Progress) line(now time.Time) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d %s", p.stage, p.done, p.total, p.what)
	for i, l := range p.labels {
		if p.counts[i] > 0 {
			fmt.Fprintf(&b, ", %d %s", p.counts[i], l)
		}
	}
	p.logf("%s, %s", b.String(), now.Sub(p.start).Round(time.Second))
}
