package mirror

import (
	"context"
	"time"
)

// SetSleep replaces how c waits between retries (tests record the waits).
func SetSleep(c *Client, f func(context.Context, time.Duration) error) { c.sleep = f }
