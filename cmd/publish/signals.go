package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// interruptedError is the cause of a context cancelled by a signal.
type interruptedError struct{ sig os.Signal }

func (e *interruptedError) Error() string {
	return fmt.Sprintf("interrupted by %s: stopped before the end, so the result is incomplete (run the command again)", signalName(e.sig))
}

// exitCode is the shell's code for a death by the signal: 128 + its
// number (130 for SIGINT, 143 for SIGTERM).
func (e *interruptedError) exitCode() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// interruptible returns a context that the first SIGINT or SIGTERM
// cancels, with an *interruptedError naming the signal as its cause
// (context.Cause). The signals' default handlers are restored at once, so
// that a second signal kills the process as usual. stop releases the
// handler.
func interruptible(parent context.Context) (ctx context.Context, stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			cancel(&interruptedError{sig: s})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(nil)
	}
}

// interrupted returns the *interruptedError of ctx, or nil when no signal
// cancelled it.
func interrupted(ctx context.Context) *interruptedError {
	var ie *interruptedError
	if errors.As(context.Cause(ctx), &ie) {
		return ie
	}
	return nil
}
