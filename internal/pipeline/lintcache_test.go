package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
)

// TestLintCache: with --lint-cache, a second lint of the same bundles
// reads no bundle blob (one HEAD per bundle for its digest) and gives the
// same findings; another lint configuration misses the cache and reads
// the bundles again; a cache directory that cannot be written is an error
// naming --lint-cache.
func TestLintCache(t *testing.T) {
	var blobs atomic.Int64
	inner := registry.New(registry.Logger(nopLogger()))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			blobs.Add(1) // counted before the answer is written
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f := newFixtureOn(t, strings.TrimPrefix(srv.URL, "http://"))
	dir := t.TempDir()
	lintWith := func(cfg lint.Config) ([]lint.Finding, int64) {
		t.Helper()
		before := blobs.Load()
		fs, err := Lint(context.Background(), LintOptions{Source: f.source, Mirror: mirror.Options{PlainHTTP: true}, Lint: cfg, LintCache: dir})
		if err != nil {
			t.Fatal(err)
		}
		return fs, blobs.Load() - before
	}
	first, read := lintWith(lint.Config{})
	if read == 0 {
		t.Fatal("the first lint read no blob: the test proves nothing")
	}
	second, read := lintWith(lint.Config{})
	if read != 0 {
		t.Errorf("the second lint read %d blobs; want none (every bundle in the cache)", read)
	}
	if fmt.Sprint(first) != fmt.Sprint(second) {
		t.Errorf("findings differ with the cache:\nfirst:  %v\nsecond: %v", first, second)
	}
	if _, read := lintWith(lint.Config{KubernetesVersion: "1.25"}); read == 0 {
		t.Error("another lint configuration read no blob: it must miss the cache")
	}

	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		ro = filepath.Join(f.source, "packages", "tiny", "1.0.0", "manifest.yaml", "cache") // a file as parent: not creatable, even for root
	}
	_, err := Lint(context.Background(), LintOptions{Source: f.source, Mirror: mirror.Options{PlainHTTP: true}, LintCache: ro})
	var fe *FlagError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "--lint-cache") {
		t.Errorf("unusable cache directory: got %v, want a *FlagError naming --lint-cache", err)
	}
}
