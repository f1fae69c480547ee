//go:build unix

package scratch

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process of that ID runs on this machine
// (signal 0: no such process is ESRCH; EPERM is a process of another
// user, alive).
func processAlive(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}
