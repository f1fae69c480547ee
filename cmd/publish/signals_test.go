package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestMain runs signalChild instead of the tests in the child process of
// TestSecondSignalKills.
func TestMain(m *testing.M) {
	if os.Getenv("PUBLISH_SIGNAL_HELPER") == "1" {
		signalChild()
	}
	os.Exit(m.Run())
}

// signalChild waits for the first signal, says so, then never returns by
// itself (a stuck clean-up): only a second signal ends it.
func signalChild() {
	ctx, stop := interruptible(context.Background())
	defer stop()
	fmt.Println("ready")
	<-ctx.Done()
	fmt.Println("cancelled", interrupted(ctx).exitCode())
	select {}
}

// TestSecondSignalKills: the first SIGINT cancels the context with a cause
// naming it (exit code 130); the default handler is back, so a second
// SIGINT kills a process that does not stop by itself.
func TestSecondSignalKills(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PUBLISH_SIGNAL_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	next := func() string {
		for lines.Scan() {
			if l := lines.Text(); l == "ready" || len(l) > 9 && l[:9] == "cancelled" {
				return l
			}
		}
		return ""
	}
	if l := next(); l != "ready" {
		cmd.Process.Kill()
		t.Fatalf("child said %q", l)
	}
	cmd.Process.Signal(syscall.SIGINT)
	if l := next(); l != "cancelled 130" {
		cmd.Process.Kill()
		t.Fatalf("after the first SIGINT the child said %q, want cancelled 130", l)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child: %v, want it killed", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Fatalf("child ended with %v, want killed by SIGINT", err)
	}
	if e := (&interruptedError{sig: syscall.SIGTERM}); e.exitCode() != 143 {
		t.Errorf("SIGTERM exit code %d, want 143", e.exitCode())
	}
}
