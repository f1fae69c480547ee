package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/pipeline"
)

func TestArchiveUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"package"},                                  // no -o
		{"package", "-o", "x.tgz", "--changed"},      // --changed without --base
		{"package", "-o", "x.tgz", "--level", "12"},  // level out of range
		{"package", "-o", "x.tgz", "--verify-cache"}, // --verify-cache without --cache
		{"package", "-o", "x.tgz", "--strict-size"},  // --strict-size without --max-size
		{"package", "-o", "x.tgz", "--max-size", "4X"},
		{"push", "x.tgz"}, // no --dst-repo
		{"push", "x.tgz", "--dst-repo", "r.example.com", "--skip-push", "--skip-crs"},
		{"push", "x.tgz", "--dst-repo", "r.example.com", "--skip-push"}, // needs --catalog
		// The catalog flags of publish run apply to push --catalog too.
		{"push", "x.tgz", "--dst-repo", "r.example.com", "--catalog", ".", "--commit-message-template", "{{.Nope"},
		{"push", "x.tgz", "--dst-repo", "r.example.com", "--no-auth", "--username", "u"},
		{"push", "x.tgz", "--dst-repo", "r.example.com", "--only", "a,,b"},                                                   // an empty artifact name
		{"mirror", "--image", "quay.io/a/b:v1", "--dst-registry", "r.example.com", "--source-mirror", "quay.io"},             // not FROM=TO
		{"mirror", "--image", "quay.io/a/b:v1", "--dst-registry", "r.example.com", "--source-mirror", "https://quay.io=m.c"}, // a scheme is no prefix
		{"create", "dir"}, // no --artifact
		{"verify"},
	} {
		root := newRootCmd()
		root.SetArgs(args)
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		var ue *usageError
		if !errors.As(err, &ue) && !strings.Contains(err.Error(), "arg(s)") {
			t.Errorf("%v: got %v, want a usage error (exit 2)", args, err)
		}
	}
}

func TestVerifyDamagedIsInputError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.tgz")
	os.WriteFile(p, []byte("not an archive"), 0o644)
	root := newRootCmd()
	root.SetArgs([]string{"verify", p})
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	var ie *pipeline.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "neither a gzip-compressed archive") {
		t.Errorf("got %v, want an input error (exit 1)", err)
	}
}

// TestPackageHelpCache: --cache shows DIR as its value name (pflag takes
// the first back-quoted word of a usage as the value name).
func TestPackageHelpCache(t *testing.T) {
	root := newRootCmd()
	root.SetArgs([]string{"package", "--help"})
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "--cache" && f[1] != "DIR" {
			t.Errorf("--cache in package --help: %s", line)
		}
	}
}

// TestPrintCache: the cache line says what was added, not "now cached",
// and a cache that could not be written gets a warning.
func TestPrintCache(t *testing.T) {
	var out, errOut bytes.Buffer
	printCache(&out, logTo(&errOut), "/ro", &archive.PackageResult{Blobs: 5, CachedBlobs: 2, CacheAdded: 0, CacheErr: errors.New("cache /ro: open /ro/blobs/sha256/.partial-1: read-only file system")})
	if want := "cache     2 of 5 blobs (0 B) read from /ro; of the 3 read from the registries (0 B), 0 added to it\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	out.Reset()
	printCache(&out, logTo(&errOut), "/c", &archive.PackageResult{Blobs: 5, CachedBlobs: 5, BlobBytes: 2048, CachedBytes: 2048})
	if want := "cache     5 of 5 blobs (2.0 KiB) read from /c\n"; out.String() != want {
		t.Errorf("everything cached: got %q, want %q", out.String(), want)
	}
	var damagedErr bytes.Buffer
	printCache(&out, logTo(&damagedErr), "/c", &archive.PackageResult{Blobs: 5, CachedBlobs: 4, CacheAdded: 1, CacheDamaged: 1})
	if !strings.HasPrefix(damagedErr.String(), "warning: 1 cached blobs had the wrong digest") {
		t.Errorf("no warning for a damaged cached blob: %q", damagedErr.String())
	}
	if !strings.HasPrefix(errOut.String(), "warning: cache /ro: open") {
		t.Errorf("no warning: %q", errOut.String())
	}
}

// TestPackageBadCacheIsUsageError: a --cache that cannot be a cache (a
// file, a directory of other files) is refused before any registry is
// read, as a usage error (exit 2), and no archive is written.
func TestPackageBadCacheIsUsageError(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "packages"), 0o755)
	for _, cache := range []string{file, dir} {
		root := newRootCmd()
		root.SetArgs([]string{"package", "-o", filepath.Join(dir, "x.tgz"), "--source", dir, "--cache", cache})
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		var fe *pipeline.FlagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "--cache") {
			t.Errorf("--cache %s: %v, want a usage error naming --cache", cache, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "x.tgz")); !os.IsNotExist(err) {
			t.Errorf("--cache %s: an archive was written", cache)
		}
	}
}
