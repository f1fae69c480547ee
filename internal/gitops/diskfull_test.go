package gitops

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestUnreachableDiskFull: a clone or fetch that fails for want of local
// space (ENOSPC, from /dev/full) says the disk is full, not to check the
// network and the credentials.
func TestUnreachableDiskFull(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("/dev/full: %v", err) // Linux always has it
	}
	defer f.Close()
	_, werr := f.Write([]byte("pack"))
	msg := (&UnreachableError{URL: "https://git.example.com/catalog.git", Op: "clone", Err: fmt.Errorf("writing objects: %w", werr)}).Error()
	if !strings.Contains(msg, "disk is full") || strings.Contains(msg, "the network") {
		t.Errorf("message: %s", msg)
	}
}
