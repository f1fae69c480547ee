//go:build !linux

package testenv

import "os/exec"

// dieWithParent does nothing but on Linux (see gitea_linux.go).
func dieWithParent(*exec.Cmd) {}
