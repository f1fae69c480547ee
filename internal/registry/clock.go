package registry

import "time"

// Clock is the time source of a Client: the inactivity watchdog, the
// waits between retries and the progress lines all run on it, so that a
// test can move time by hand. SystemClock is the real one.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, unless
	// the returned Timer is stopped first (time.AfterFunc).
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call (*time.Timer implements it).
type Timer interface {
	// Stop prevents the call; false if it was already made or stopped.
	Stop() bool
	// Reset makes the call happen d from now instead.
	Reset(d time.Duration) bool
}

// SystemClock is the Clock of package time.
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time                            { return time.Now() }
func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
