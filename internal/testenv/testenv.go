package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// RequireEnv is the environment variable that turns a missing integration
// binary from a skip into a test failure when set to "1" (CI sets it).
const RequireEnv = "PUBLISH_REQUIRE_INTEGRATION"

// Skip is the one way a test says it cannot run: it skips t with the
// message (fmt.Sprint of args), or, when the environment variable
// PUBLISH_REQUIRE_INTEGRATION is "1" (as .ci/run sets it), fails t with the
// same message, so that CI never passes a test that did not run. Use it for
// every missing tool, fixture or privilege; Short is for -short. It does not
// return.
func Skip(t testing.TB, args ...any) {
	t.Helper()
	msg := fmt.Sprint(args...)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s (%s=1: a skip is a failure)", msg, RequireEnv)
	}
	t.Skip(msg)
}

// Skipf is Skip with a format.
func Skipf(t testing.TB, format string, args ...any) {
	t.Helper()
	Skip(t, fmt.Sprintf(format, args...))
}

// Short skips t under -short (make test-short), saying why the test is not
// short (what it builds or starts): -short is the caller's choice, so this
// skip never turns into a failure. Tests that build binaries or the corpus,
// or start servers, call it first.
func Short(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped with -short: " + why)
	}
}

// Require returns the absolute path of binary, as found by exec.LookPath
// (binary may be a bare name searched in PATH or a path).
//
// With -short (make test-short) it skips: integration tests are not short.
// If the binary is not found, the test is skipped with a message naming the
// Debian package debianPackage that provides it, or, when the environment
// variable PUBLISH_REQUIRE_INTEGRATION is "1", the test fails with the same
// message. Either way Require does not return in that case.
func Require(t testing.TB, binary, debianPackage string) string {
	t.Helper()
	Short(t, "integration test")
	path, err := exec.LookPath(binary)
	if err == nil {
		return path
	}
	Skipf(t, "integration test needs the Debian %s package: apt-get install -y %s (%v)", debianPackage, debianPackage, err)
	return ""
}

// environWithout returns os.Environ() minus the variables whose names start
// with prefix.
func environWithout(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			env = append(env, kv)
		}
	}
	return env
}

// randomSecret returns 32 hex characters from crypto/rand.
func randomSecret(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("testenv: random secret: %v", err)
	}
	return hex.EncodeToString(b)
}

// tailBuffer keeps the last max lines written to it; it is safe for
// concurrent use.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func (b *tailBuffer) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, line)
	if len(b.lines) > b.max {
		b.lines = append(b.lines[:0], b.lines[len(b.lines)-b.max:]...)
	}
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// logWriter forwards what a child process writes to t.Logf, one call per
// Write, prefixed with prefix.
type logWriter struct {
	t      testing.TB
	prefix string
}

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s%s", w.prefix, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// SharedDir returns the project's shared directory (../shared beside the
// repo root, or $PUBLISH_SHARED_DIR) and whether it exists. Tests that need
// the corpus or the CRDs skip with a clear message when it does not, unless
// PUBLISH_REQUIRE_INTEGRATION=1.
func SharedDir() (string, bool) {
	if d := os.Getenv("PUBLISH_SHARED_DIR"); d != "" {
		st, err := os.Stat(d)
		return d, err == nil && st.IsDir()
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(filepath.Dir(dir), "shared")
			st, err := os.Stat(d)
			return d, err == nil && st.IsDir()
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// RequireShared returns SharedDir or skips (fails under
// PUBLISH_REQUIRE_INTEGRATION=1) with a message saying what is missing.
func RequireShared(t testing.TB) string {
	t.Helper()
	d, ok := SharedDir()
	if ok {
		return d
	}
	Skip(t, "this test needs the project's shared directory (corpus and CRDs) at ../shared beside the repo, or PUBLISH_SHARED_DIR")
	return ""
}
