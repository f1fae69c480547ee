package pipeline

import (
	"github.com/operator-publish/publish/internal/logging"
)

// newProgress starts the progress of a phase over total items named what
// ("bundles read") in stage ("read"), on the run's logger and clock
// (Options.now): logging.Progress, whose first label counts the items
// taken from the lint cache (step(cached)).
func (o *Options) newProgress(stage, what string, total int) *progress {
	return &progress{logging.NewProgress(o.logf, o.now, stage, what, total, "from the lint cache")}
}

// progress is a logging.Progress whose items may come from the lint cache.
type progress struct{ p *logging.Progress }

// step records one item done (cached: taken from the lint cache).
func (p *progress) step(cached bool) { p.p.Step(cached) }

// end logs the last line when the phase logged before.
func (p *progress) end() { p.p.End() }
