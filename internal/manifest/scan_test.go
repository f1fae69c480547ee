package manifest

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestScanNotRegular: anything named manifest.yaml that is not a regular
// file is an error naming its path, not a version that silently
// disappears (and gets delisted).
func TestScanNotRegular(t *testing.T) {
	root := t.TempDir()
	pkgs := filepath.Join(root, "packages")
	for _, d := range []string{"etcd/0.9.4", "etcd/0.9.5/manifest.yaml", "etcd/0.9.6", "etcd/0.9.7"} {
		if err := os.MkdirAll(filepath.Join(pkgs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pkgs, "etcd/0.9.4/manifest.yaml"), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory named manifest.yaml, holding what looks like a manifest.
	os.WriteFile(filepath.Join(pkgs, "etcd/0.9.5/manifest.yaml/manifest.yaml"), []byte(strings.ReplaceAll(good, "0.9.4", "0.9.5")), 0o644)
	want := map[string]string{"packages/etcd/0.9.5/manifest.yaml": "a directory"}
	if runtime.GOOS != "windows" {
		if err := syscall.Mkfifo(filepath.Join(pkgs, "etcd/0.9.6/manifest.yaml"), 0o644); err != nil {
			t.Fatal(err)
		}
		want["packages/etcd/0.9.6/manifest.yaml"] = "a named pipe (FIFO)"
		// A socket path must be short: listen in a short directory and
		// link nothing; the socket file itself is what the walk finds.
		sock := filepath.Join(pkgs, "etcd/0.9.7/manifest.yaml")
		if len(sock) < 100 {
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			want["packages/etcd/0.9.7/manifest.yaml"] = "a socket"
		}
	}
	files, ms, err := ScanFiles(root, pkgs)
	if len(ms) != 1 || len(files) != 1 {
		t.Fatalf("got %d manifests, %d files: %v", len(ms), len(files), err)
	}
	if !errors.Is(err, ErrNotRegular) {
		t.Errorf("error does not wrap ErrNotRegular: %v", err)
	}
	for p, what := range want {
		if err == nil || !strings.Contains(err.Error(), p+": "+what+", not a regular file") {
			t.Errorf("error lacks %s (%s): %v", p, what, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "manifest.yaml/manifest.yaml") {
		t.Errorf("read inside a directory named manifest.yaml: %v", err)
	}
	if _, err := ReadFiles(root, pkgs); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFiles: %v", err)
	}
}

// TestScanTooLarge: a manifest over MaxFileSize is an error naming the
// file and the limit, and is not read past the cap.
func TestScanTooLarge(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "packages/etcd/0.9.4")
	os.MkdirAll(dir, 0o755)
	big := []byte(good + "# " + string(bytes.Repeat([]byte("x"), MaxFileSize)) + "\n")
	if err := os.WriteFile(filepath.Join(dir, "manifest.yaml"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(root, "packages/etcd/0.9.3")
	os.MkdirAll(ok, 0o755)
	os.WriteFile(filepath.Join(ok, "manifest.yaml"), []byte(strings.ReplaceAll(good, "0.9.4", "0.9.3")), 0o644)
	files, ms, err := ScanFiles(root, filepath.Join(root, "packages"))
	if len(ms) != 1 || len(files) != 1 {
		t.Fatalf("got %d manifests: %v", len(ms), err)
	}
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "packages/etcd/0.9.4/manifest.yaml: the file is larger than 1 MiB") {
		t.Errorf("error: %v", err)
	}
	// Exactly at the cap is read.
	exact := append([]byte(good+"# "), bytes.Repeat([]byte("x"), MaxFileSize-len(good)-3)...)
	exact = append(exact, '\n')
	os.WriteFile(filepath.Join(dir, "manifest.yaml"), exact, 0o644)
	if _, ms, err := ScanFiles(root, filepath.Join(root, "packages")); err != nil || len(ms) != 2 {
		t.Errorf("a file of exactly %d bytes: %d manifests, %v", len(exact), len(ms), err)
	}
}
