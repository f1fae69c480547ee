package mirror

import (
	"fmt"
	"sync"
	"time"

	"github.com/operator-publish/publish/internal/registry"
)

// progressEvery is how often a copy of many images logs how far it is.
const progressEvery = 10 * time.Second

// progress logs how far copyAll is over its images, at level Info on the
// registry client's logger ("mirror: 1200 of 28645 related images, 40
// present already, 3m10s"): at most every progressEvery of the client's
// clock, when an image ends, and once more at the end when it logged
// before, so that a copy that ends within progressEvery logs nothing. Safe
// for concurrent use (one goroutine per image reports).
type progress struct {
	c      *Client
	what   string
	total  int
	start  time.Time
	mu     sync.Mutex
	done   int
	skip   int
	failed int
	last   time.Time
	logged bool
}

func (c *Client) newProgress(what string, total int) *progress {
	t := c.clock().Now()
	return &progress{c: c, what: what, total: total, start: t, last: t}
}

func (c *Client) clock() registry.Clock {
	if c.opts.Clock != nil {
		return c.opts.Clock
	}
	return registry.SystemClock
}

// step records one image ended: skipped (the destination had it) or
// failed, and logs when progressEvery passed since the last line.
func (p *progress) step(skipped, failed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if skipped {
		p.skip++
	}
	if failed {
		p.failed++
	}
	if now := p.c.clock().Now(); now.Sub(p.last) >= progressEvery && p.done < p.total {
		p.last, p.logged = now, true
		p.line(now)
	}
}

// end logs the last line when the copy logged before.
func (p *progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.logged {
		p.line(p.c.clock().Now())
	}
}

func (p *progress) line(now time.Time) {
	msg := fmt.Sprintf("mirror: %d of %d %s, %d present already", p.done, p.total, p.what, p.skip)
	if p.failed > 0 {
		msg += fmt.Sprintf(", %d failed", p.failed)
	}
	p.c.reg.Logger().Info(msg + ", " + now.Sub(p.start).Round(time.Second).String())
}
