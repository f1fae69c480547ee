package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/logging"
)

func TestEnvPrecedence(t *testing.T) {
	inv := newInvocation(nil)
	cmd := newRunCmd(inv)
	fs := cmd.Flags()
	t.Setenv("PUBLISH_CLUSTER", "from-env")
	t.Setenv("PUBLISH_DST_REGISTRY", "env.example.com")
	t.Setenv("PUBLISH_PLAIN", "true")
	if err := fs.Parse([]string{"--dst-registry", "flag.example.com"}); err != nil {
		t.Fatal(err)
	}
	if _, err := inv.applyEnv(fs); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"dst-registry": "flag.example.com", "cluster": "from-env", "plain-http": "true", "packages-dir": "packages"} {
		if got := fs.Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", flag, got, want)
		}
	}
	t.Setenv("PUBLISH_CONCURRENCY", "many")
	if _, err := inv.applyEnv(fs); err == nil || !strings.Contains(err.Error(), "PUBLISH_CONCURRENCY") {
		t.Errorf("bad env value: %v", err)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--dst-registry", "r.example.com"},
		{"run", "--catalog", "x"},
		{"run", "--no-such-flag"},
		{"run", "--dst-registry", "r.example.com", "--catalog", "x", "--report", "/no/such/dir/report.json"},
		{"render"},
	} {
		root := newRootCmd()
		root.SetArgs(args)
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: got %v, want a usage error (exit 2)", args, err)
		}
	}
}

// TestConfigPrecedence: flag > PUBLISH_* > publish.yaml > default. The
// --cluster default is "": every cluster of publish.yaml, else global
// (resolveClusters).
func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "publish.yaml"), []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\ndstRegistry: file.example.com\nnamespace: from-file\nlibrary: from-file\n"), 0o644)
	inv := newInvocation(nil)
	cmd := newRunCmd(inv)
	fs := cmd.Flags()
	t.Setenv("PUBLISH_NAMESPACE", "from-env")
	if err := fs.Parse([]string{"--source", dir, "--library", "from-flag"}); err != nil {
		t.Fatal(err)
	}
	if _, err := inv.applyEnv(fs); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"dst-registry": "file.example.com", "namespace": "from-env", "library": "from-flag", "cluster": ""} {
		if got := fs.Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", flag, got, want)
		}
	}
}

// logTo is an invocation whose text log goes to w.
func logTo(w io.Writer) *invocation {
	inv := newInvocation(nil)
	inv.log = logging.New(w, logging.Options{})
	return inv
}

// TestDeliveryUsageErrors: a bad --delivery or --auto-merge, and
// pull-request delivery without a forge token, are usage errors naming
// the flag; none reads or mirrors anything.
func TestDeliveryUsageErrors(t *testing.T) {
	cat := t.TempDir()
	for args, want := range map[string]string{
		"--delivery merge":                         "--delivery",
		"--delivery pull-request --auto-merge yes": "--auto-merge",
		"--delivery pull-request":                  "--forge-token",
	} {
		root := newRootCmd()
		root.SetArgs(append([]string{"run", "--source", t.TempDir(), "--catalog", cat, "--dst-registry", "r.example.com", "--allow-empty"}, strings.Fields(args)...))
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want a usage error naming %s", args, err, want)
		}
	}
}
