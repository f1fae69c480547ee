package pipeline

import (
	"sync"
	"time"
)

// progressEvery is how often a long phase logs how far it is.
const progressEvery = 10 * time.Second

// progress logs how far a phase over many items is ("<stage>: 1200 of
// 7018 bundles read, 1150 from the lint cache, 40s"), at most every
// progressEvery of the run's clock (Options.now) and once more at the end
// when it logged before: a phase that ends within progressEvery logs
// nothing. Safe for concurrent use (the reading goroutines report).
type progress struct {
	logf   func(format string, args ...any)
	now    func() time.Time
	stage  string
	what   string
	total  int
	start  time.Time
	mu     sync.Mutex
	done   int
	cached int
	last   time.Time
	logged bool
}

// newProgress starts the progress of a phase over total items named what
// ("bundles read") in stage ("read").
func (o *Options) newProgress(stage, what string, total int) *progress {
	return startProgress(o.logf, o.now, stage, what, total)
}

// startProgress is newProgress for a command without Options: its lines
// go to logf, its time comes from now.
func startProgress(logf func(string, ...any), now func() time.Time, stage, what string, total int) *progress {
	t := now()
	return &progress{logf: logf, now: now, stage: stage, what: what, total: total, start: t, last: t}
}

// step records one item done (cached: taken from the lint cache) and logs
// when progressEvery passed since the last line.
func (p *progress) step(cached bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if cached {
		p.cached++
	}
	if now := p.now(); now.Sub(p.last) >= progressEvery && p.done < p.total {
		p.last, p.logged = now, true
		p.line(now)
	}
}

// end logs the last line when the phase logged before.
func (p *progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.logged {
		p.line(p.now())
	}
}

func (p *progress) line(now time.Time) {
	if p.cached > 0 {
		p.logf("%s: %d of %d %s, %d from the lint cache, %s", p.stage, p.done, p.total, p.what, p.cached, now.Sub(p.start).Round(time.Second))
		return
	}
	p.logf("%s: %d of %d %s, %s", p.stage, p.done, p.total, p.what, now.Sub(p.start).Round(time.Second))
}
