package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSweepsWhatAKilledRunLeft: any command starts by removing from
// $TMPDIR the temporary directories of a publish that no longer runs, and
// says so; those of a live process stay.
func TestSweepsWhatAKilledRunLeft(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command(os.Args[0], "-test.run=^$")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(tmp, "publish-catalog.p"+strconv.Itoa(dead.Process.Pid)+".42")
	live := filepath.Join(tmp, "publish-catalog.p"+strconv.Itoa(os.Getppid())+".43")
	old := time.Now().Add(-time.Hour)
	for _, d := range []string{left, live} {
		if err := os.MkdirAll(filepath.Join(d, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	root := newRoot(logTo(&out))
	root.SetArgs([]string{"version"})
	root.SetOut(&out)
	root.SetErr(&out)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("a killed run's clone is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live process's directory was removed: %v", err)
	}
	if !strings.Contains(out.String(), "removed 1 temporary directories and files that a killed publish left in "+tmp) {
		t.Errorf("log: %s", out.String())
	}
}
