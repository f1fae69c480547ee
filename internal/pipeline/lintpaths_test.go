package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/operator-publish/publish/internal/lint"
)

const lintPathsManifest = `apiVersion: app.alauda.cn/v1beta1
kind: PackageManifest
metadata:
  name: etcd.v0.9.4
spec:
  type: bundle
  artifact: registry.example.com/ops/etcd-bundle@sha256:0000000000000000000000000000000000000000000000000000000000000000
  version: v0.9.4
  arch: [linux/amd64]
  info:
    displayName: etcd
`

func lintPathsRepo(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	for p, s := range map[string]string{
		"packages/etcd/0.9.4/manifest.yaml": lintPathsManifest,
		"packages/etcd/README.md":           "# etcd\n",
		"packages/cm/manifest.yaml":         "apiVersion: v1\nkind: ConfigMap\n",
		"docs/manifest.yaml":                lintPathsManifest,
		"README.md":                         "# repo\n",
	} {
		full := filepath.Join(src, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(src, "packages/empty"), 0o755)
	return src
}

// TestLintPaths: a PATH that cannot be linted is a usage error
// (*PathError, exit 2) that says why; none makes lint pass having read no
// manifest.
func TestLintPaths(t *testing.T) {
	src := lintPathsRepo(t)
	outside := filepath.Join(t.TempDir(), "manifest.yaml")
	os.WriteFile(outside, []byte(lintPathsManifest), 0o644)
	for _, tc := range []struct{ path, want string }{
		{"/etc/passwd", "/etc/passwd: outside --source"},
		{outside, outside + ": outside --source"},
		{"../x", "../x: outside --source"},
		{"packages/no-such-operator", "packages/no-such-operator: no such file or directory below --source"},
		{"README.md", "README.md: not a manifest"},
		{"packages/etcd/README.md", "packages/etcd/README.md: not a manifest"},
		{"packages/cm/manifest.yaml", "packages/cm/manifest.yaml: not a PackageManifest"},
		{"docs/manifest.yaml", "docs/manifest.yaml: not below --packages-dir packages"},
		{"docs", "docs: not below --packages-dir packages"},
		{"packages/empty", "packages/empty: no manifest.yaml below it"},
	} {
		_, err := Lint(context.Background(), LintOptions{Source: src, Offline: true, Paths: []string{tc.path}})
		var pe *PathError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("lint %s: %v, want a *PathError %q", tc.path, err, tc.want)
		}
		if err != nil && tc.path == "/etc/passwd" && strings.Contains(err.Error(), "no such file") {
			t.Errorf("lint /etc/passwd says it does not exist: %v", err)
		}
	}
	// What can be linted: a manifest, its directory, the packages dir, the
	// repo, an absolute path inside --source.
	for _, p := range []string{"packages/etcd/0.9.4/manifest.yaml", "packages/etcd", "packages", ".", filepath.Join(src, "packages/etcd/0.9.4")} {
		fs, err := Lint(context.Background(), LintOptions{Source: src, Offline: true, Paths: []string{p}})
		if err != nil {
			t.Errorf("lint %s: %v", p, err)
			continue
		}
		if s := lint.Summarize(fs); s.Errors != 0 {
			t.Errorf("lint %s: %v", p, fs)
		}
	}
	// An absolute PATH selects the findings of its files.
	os.WriteFile(filepath.Join(src, "packages/etcd/0.9.4/manifest.yaml"), []byte(strings.Replace(lintPathsManifest, "arch:", "archs:", 1)), 0o644)
	fs, err := Lint(context.Background(), LintOptions{Source: src, Offline: true, Paths: []string{filepath.Join(src, "packages/etcd/0.9.4/manifest.yaml")}})
	if err != nil || lint.Summarize(fs).Errors == 0 {
		t.Errorf("absolute path: %v %v", fs, err)
	}
}

// TestLintNothing: a packages directory with no manifest is not "lint ok".
func TestLintNothing(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "packages/op"), 0o755)
	_, err := Lint(context.Background(), LintOptions{Source: src, Offline: true})
	var pe *PathError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "no manifest.yaml below it") {
		t.Errorf("lint of no manifest: %v", err)
	}
}

// TestLintNotRegular: a directory or FIFO named manifest.yaml is a lint
// error naming the path, also when it is the PATH.
func TestLintNotRegular(t *testing.T) {
	src := lintPathsRepo(t)
	os.MkdirAll(filepath.Join(src, "packages/etcd/0.9.5/manifest.yaml"), 0o755)
	os.MkdirAll(filepath.Join(src, "packages/etcd/0.9.6"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(src, "packages/etcd/0.9.6/manifest.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, paths := range [][]string{nil, {"packages/etcd/0.9.5"}, {"packages/etcd/0.9.6/manifest.yaml"}} {
		fs, err := Lint(context.Background(), LintOptions{Source: src, Offline: true, Paths: paths})
		if err != nil {
			t.Fatalf("lint %v: %v", paths, err)
		}
		var got []string
		for _, f := range fs {
			if f.Severity == lint.Error && strings.Contains(f.Message, "not a regular file") {
				got = append(got, f.Path)
			}
		}
		if len(got) == 0 {
			t.Errorf("lint %v: no error for the manifest.yaml that is not a file: %v", paths, fs)
		}
	}
}
