package mirror

import (
	"fmt"

	"github.com/operator-publish/publish/internal/logging"
	"github.com/operator-publish/publish/internal/registry"
)

// newProgress is the progress of copyAll over total images named what
// ("related images"), logged at level Info on the registry client's logger
// at most every 10 s of the client's clock (logging.Progress: "mirror: 1200
// of 28645 related images, 40 present already, 3m10s"). Step's marks:
// skipped (the destination had it), failed.
func (c *Client) newProgress(what string, total int) *logging.Progress {
	logf := func(format string, args ...any) { c.reg.Logger().Info(fmt.Sprintf(format, args...)) }
	return logging.NewProgress(logf, c.clock().Now, "mirror", what, total, "present already", "failed")
}

func (c *Client) clock() registry.Clock {
	if c.opts.Clock != nil {
		return c.opts.Clock
	}
	return registry.SystemClock
}
