package testenv

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel send SIGTERM to the process cmd starts when
// the test process dies before its cleanups ran (a panic, a -timeout, a
// SIGKILL), so that no server outlives its test.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
