package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/registry"
)

// runCmd runs publish with args as main does and returns its output
// (stdout and stderr) and exit code.
func runCmd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	inv := logTo(&out)
	root := newRoot(inv)
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	code := 0
	if err := root.ExecuteContext(t.Context()); err != nil {
		code = exitCode(err)
		out.WriteString(err.Error() + "\n")
	}
	t.Logf("publish %s: exit %d\n%s", strings.Join(args, " "), code, out.String())
	return out.String(), code
}

// TestInfrastructureExit2: a registry that cannot be used as configured
// (a certificate of an unknown authority, credentials refused, nothing
// listening) makes every command that reads the bundle exit 2, lint and
// create included, and lint reports it as the failure it is, not as a
// finding of the manifest.
func TestInfrastructureExit2(t *testing.T) {
	quiet := log.New(io.Discard, "", 0)
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsSrv.Config.ErrorLog = quiet
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	authSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(authSrv.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	for _, tc := range []struct {
		name, host string
		flags      []string
		hint       string // what run says about it, which create says too
	}{
		{"unknown authority", strings.TrimPrefix(tlsSrv.URL, "https://"), nil, "--ca-file"},
		{"401", strings.TrimPrefix(authSrv.URL, "http://"), []string{"--plain-http", "--src-username", "u", "--src-password", "wrong"}, "refused the credentials (401): check --src-username/--src-password"},
		{"unreachable", closed, []string{"--plain-http", "--retries", "1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := tc.host + "/acme/op-bundle:v1.0.0"
			repo := t.TempDir()
			dir := filepath.Join(repo, "packages", "op", "1.0.0")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			m := "apiVersion: app.alauda.cn/v1beta1\nkind: PackageManifest\nmetadata:\n  name: op.v1.0.0\nspec:\n  type: bundle\n  artifact: " + ref + "\n  version: v1.0.0\n  info:\n    displayName: Op\n"
			if err := os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(m), 0o644); err != nil {
				t.Fatal(err)
			}
			out, code := runCmd(t, append([]string{"lint", "--source", repo}, tc.flags...)...)
			if code != 2 {
				t.Errorf("lint: exit %d, want 2", code)
			}
			for _, bad := range []string{"bundle/fetch", "images/check", "lint failed", "lint error", "lint ok"} {
				if strings.Contains(out, bad) {
					t.Errorf("lint reports the registry failure as a finding (%q)", bad)
				}
			}
			out, code = runCmd(t, append([]string{"create", filepath.Join(t.TempDir(), "new"), "--artifact", ref}, tc.flags...)...)
			if code != 2 {
				t.Errorf("create: exit %d, want 2", code)
			}
			if !strings.Contains(out, tc.hint) {
				t.Errorf("create does not say %q", tc.hint)
			}
		})
	}
}

// TestExitCodeInfrastructure: a registry failure to fix or wait out exits
// 2 even where a command wraps it as an input error; a missing image stays
// the input's fault (1).
func TestExitCodeInfrastructure(t *testing.T) {
	for k, want := range map[registry.Kind]int{
		registry.KindUnauthorized: 2, registry.KindForbidden: 2, registry.KindUnknownAuthority: 2,
		registry.KindTLS: 2, registry.KindPlainHTTP: 2, registry.KindUnreachable: 2, registry.KindTimeout: 2,
		registry.KindNotFound: 1,
	} {
		err := &pipeline.InputError{Err: fmt.Errorf("reading x: %w", &registry.Error{Kind: k, Err: errors.New("x")})}
		if got := exitCode(err); got != want {
			t.Errorf("kind %v: exit %d, want %d", k, got, want)
		}
	}
}
