package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hungAPIServer is an API server that accepts every request and never
// answers it, until the test ends; it returns a kubeconfig for it.
func hungAPIServer(t *testing.T) string {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: hung\n  cluster:\n    server: " + srv.URL + "\n" +
		"contexts:\n- name: hung\n  context:\n    cluster: hung\n    user: u\ncurrent-context: hung\nusers:\n- name: u\n  user:\n    token: not-printed\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}

// TestKubeTimeout: status, adopt and import against an API server that
// never answers give up after --kube-timeout with an error naming it (exit
// 2), after one line saying what they wait for; a --kube-timeout that is
// not positive is a usage error.
func TestKubeTimeout(t *testing.T) {
	kc := hungAPIServer(t)
	rendered := t.TempDir()
	av := "apiVersion: app.alauda.io/v1alpha1\nkind: ArtifactVersion\nmetadata:\n  name: etcd.v1.0.0\n  namespace: cpaas-system\n  labels:\n    cpaas.io/artifact-version: etcd\nspec:\n  tag: v1.0.0\n"
	if err := os.WriteFile(filepath.Join(rendered, "etcd.yaml"), []byte(av), 0o644); err != nil {
		t.Fatal(err)
	}
	catalog := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
	}{
		{"status", []string{"status", "--rendered", rendered}},
		{"adopt", []string{"adopt"}},
		{"import", []string{"import", "--catalog", catalog, "--dry-run"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			root := newRoot(logTo(&errOut))
			root.SetArgs(append(c.args, "--kubeconfig", kc, "--kube-timeout", "400ms"))
			root.SetOut(&out)
			root.SetErr(&errOut)
			err := root.Execute()
			var te *kubeTimeoutError
			if !errors.As(err, &te) {
				t.Fatalf("%v: %v, want the --kube-timeout error\n%s", c.args, err, errOut.String())
			}
			if code := exitCode(err); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			msg := err.Error()
			if !strings.Contains(msg, "did not answer within 400ms (--kube-timeout)") || strings.Contains(msg+errOut.String(), "not-printed") {
				t.Errorf("error: %s", msg)
			}
			if got := strings.Count(errOut.String(), "waiting for the Kubernetes API server"); got != 1 {
				t.Errorf("%d waiting lines, want 1:\n%s", got, errOut.String())
			}
		})
	}
	root := newRoot(logTo(&bytes.Buffer{}))
	root.SetArgs([]string{"adopt", "--kubeconfig", kc, "--kube-timeout", "0s"})
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	var ue *usageError
	if err := root.Execute(); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--kube-timeout") {
		t.Errorf("--kube-timeout 0s: %v, want a usage error naming it", err)
	}
}
