package catalog

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestTipIgnoresQuarantine: while git-receive-pack takes a push into a
// local catalog, the push's objects wait in a quarantine directory
// (objects/tmp_objdir-incoming-*) until the pre-receive hook passes. A tip
// opened in place meanwhile, whose commit has the same trees and blobs,
// must not count them as the repo's: the hook refuses that push, the
// quarantine goes, and the tip's commit is still whole and pushes.
func TestTipIgnoresQuarantine(t *testing.T) {
	gitBin := testenv.Require(t, "git", "git")
	bare := newBare(t)
	release := filepath.Join(t.TempDir(), "release")
	if err := syscall.Mkfifo(release, 0o600); err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(bare, "hooks", "pre-receive")
	// The hook says it holds the push, then waits for the test and refuses.
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho holding >&2\nread x < '"+release+"'\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"rendered/global/tiny/artifact.yaml": "kind: Artifact\n", "publish/state.yaml": "source: {}\n"}
	wt := t.TempDir()
	run(t, wt, "init", "-q", "-b", "main")
	var changes []Change
	for p, c := range files {
		writeFile(t, wt, p, c)
		changes = append(changes, Change{Path: p, Data: []byte(c)})
	}
	run(t, wt, "add", "-A")
	run(t, wt, "commit", "-q", "-m", "the other run")

	push := exec.Command(gitBin, "-C", wt, "push", "--no-progress", bare, "main")
	push.Env = append(os.Environ(), gitEnv...)
	push.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the hook too, on cleanup
	stderr, err := push.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := push.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited {
			syscall.Kill(-push.Process.Pid, syscall.SIGKILL)
			push.Wait()
		}
	})
	var said strings.Builder
	for sc := bufio.NewScanner(stderr); !strings.Contains(said.String(), "holding") && sc.Scan(); {
		said.WriteString(sc.Text() + "\n")
	}
	if !strings.Contains(said.String(), "holding") {
		t.Fatalf("the pre-receive hook did not run:\n%s", said.String())
	}
	if q, _ := filepath.Glob(filepath.Join(bare, "objects", "*incoming-*")); len(q) == 0 {
		t.Fatal("no quarantine directory while the hook runs")
	}

	tip := openTip(t, gitops.Options{URL: bare})
	w, err := tip.Commit(changes, opts("this run"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(release, []byte("refuse\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waited = true
	if err := push.Wait(); err == nil {
		t.Fatal("the hook let the other push in")
	}
	if q, _ := filepath.Glob(filepath.Join(bare, "objects", "*incoming-*")); len(q) != 0 {
		t.Fatalf("the refused push's quarantine is still there: %v", q)
	}
	for _, h := range w.Objects {
		if _, err := tip.Storer().EncodedObject(plumbing.AnyObject, h); err != nil {
			t.Errorf("object %s of the tip's commit: %v", h, err)
		}
	}
	os.Remove(hook)
	if _, err := tip.Push(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	run(t, bare, "fsck", "--strict", "--no-dangling")
}
