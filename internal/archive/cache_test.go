package archive

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// countingRegistry is the in-process registry behind a switch: it counts
// blob and manifest GETs and can be turned off (every request then fails).
type countingRegistry struct {
	host            string
	blobs, manifest atomic.Int64
	off             atomic.Bool
}

func startCountingRegistry(t *testing.T) *countingRegistry {
	t.Helper()
	cr := &countingRegistry{}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cr.off.Load() {
			http.Error(w, "registry switched off by the test", http.StatusServiceUnavailable)
			return
		}
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			cr.blobs.Add(1)
		}
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/") {
			cr.manifest.Add(1)
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	cr.host = strings.TrimPrefix(s.URL, "http://")
	return cr
}

// pinned returns the fixture's references pinned by digest (as bundles pin
// their related images), so that a warm cache needs no request at all.
func pinned(t *testing.T, refs []string) []Image {
	t.Helper()
	var out []Image
	for i, r := range refs {
		d, err := remote.Head(mustRef(t, r))
		if err != nil {
			t.Fatal(err)
		}
		repo, _, _ := strings.Cut(r, ":v")
		out = append(out, Image{Ref: repo + "@" + d.Digest.String(), Bundle: i == 0})
	}
	return out
}

func sha256File(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func TestPackageCache(t *testing.T) {
	cr := startCountingRegistry(t)
	imgs, idx := pushFixture(t, cr.host)
	images := pinned(t, append(imgs, idx))
	dir := t.TempDir()
	cache, err := OpenCache(filepath.Join(dir, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	pack := func(name string, c *Cache) (*PackageResult, string) {
		t.Helper()
		out := filepath.Join(dir, name)
		res, err := WriteFile(ctx(t), out, PackageOptions{Images: images, Level: DefaultLevel, Cache: c})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res, sha256File(t, out)
	}
	_, plain := pack("plain.tgz", nil)
	cold, coldSum := pack("cold.tgz", cache)
	if cold.CachedBlobs != 0 || coldSum != plain {
		t.Fatalf("cold cache: %d blobs cached, sum %s, want 0 and %s", cold.CachedBlobs, coldSum, plain)
	}
	// Every manifest and blob is now in the cache, an OCI image layout
	// that go-containerregistry reads.
	l, err := layout.FromPath(cache.Dir())
	if err != nil {
		t.Fatalf("the cache is not an OCI image layout: %v", err)
	}
	for _, im := range cold.Images {
		h := mustHash(t, im.Digest)
		if _, err := l.Bytes(h); err != nil {
			t.Errorf("manifest %s of %s not cached: %v", im.Digest, im.Ref, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(cache.Dir(), "blobs", "sha256", cacheTempPrefix+"*")); len(left) > 0 {
		t.Errorf("temporary files left in the cache: %v", left)
	}

	// Warm, with the registry switched off: the same archive, byte for byte.
	cr.off.Store(true)
	blobs, mans := cr.blobs.Load(), cr.manifest.Load()
	warm, warmSum := pack("warm.tgz", cache)
	if warmSum != plain || warm.CachedBlobs != warm.Blobs || warm.CachedBytes != warm.BlobBytes {
		t.Errorf("warm cache: sum %s (want %s), %d of %d blobs cached", warmSum, plain, warm.CachedBlobs, warm.Blobs)
	}
	if cr.blobs.Load() != blobs || cr.manifest.Load() != mans {
		t.Errorf("warm cache still read the registry: %d blob and %d manifest GETs", cr.blobs.Load()-blobs, cr.manifest.Load()-mans)
	}
	cr.off.Store(false)

	// A truncated blob is read from the registry again and repaired.
	var layer string
	filepath.WalkDir(filepath.Join(cache.Dir(), "blobs", "sha256"), func(p string, d os.DirEntry, err error) error {
		if st, _ := os.Stat(p); layer == "" && err == nil && !d.IsDir() && st.Size() > 1500 {
			layer = p
		}
		return nil
	})
	good, _ := os.ReadFile(layer)
	os.WriteFile(layer, good[:len(good)-1], 0o644)
	blobs = cr.blobs.Load()
	if res, sum := pack("truncated.tgz", cache); sum != plain || res.CachedBlobs != res.Blobs-1 || cr.blobs.Load() != blobs+1 {
		t.Errorf("truncated cache blob: %d of %d blobs cached, %d registry reads, same archive: %v", res.CachedBlobs, res.Blobs, cr.blobs.Load()-blobs, sum == plain)
	}
	if got := sha256File(t, layer); got != filepath.Base(layer) {
		t.Errorf("truncated cache blob not repaired")
	}

	// A blob damaged in place is trusted (the cache is, like containerd's
	// content store): the archive's consumers catch it, naming the blob.
	bad := append([]byte(nil), good...)
	bad[len(bad)/2] ^= 0xff
	os.WriteFile(layer, bad, 0o644)
	pack("trusted.tgz", cache)
	if _, err := Verify(filepath.Join(dir, "trusted.tgz"), Limits{}, nil); err == nil || !strings.Contains(err.Error(), filepath.Base(layer)) {
		t.Errorf("verify of an archive with a damaged blob: %v", err)
	}

	// With Verify, damaged blobs and manifests are read from the registry
	// again (and repaired in the cache); the archive is unchanged.
	var manifest string
	filepath.WalkDir(filepath.Join(cache.Dir(), "blobs", "sha256"), func(p string, d os.DirEntry, err error) error {
		if data, _ := os.ReadFile(p); manifest == "" && err == nil && !d.IsDir() && bytes.Contains(data, []byte(`"schemaVersion"`)) && bytes.Contains(data, []byte(`"layers"`)) { // an image manifest (a config has "layers" too)
			manifest = p
			data[len(data)/2] ^= 0xff
			os.WriteFile(p, data, 0o644)
		}
		return nil
	})
	cache.Verify = true
	blobs = cr.blobs.Load()
	repaired, sum := pack("repaired.tgz", cache)
	if sum != plain {
		t.Errorf("archive from a damaged cache with Verify differs")
	}
	if repaired.CachedBlobs != repaired.Blobs-1 || cr.blobs.Load() != blobs+1 || repaired.CacheDamaged != 1 {
		t.Errorf("with Verify, %d of %d blobs cached, %d registry reads, %d damaged", repaired.CachedBlobs, repaired.Blobs, cr.blobs.Load()-blobs, repaired.CacheDamaged)
	}
	for _, p := range []string{layer, manifest} {
		if got := sha256File(t, p); got != filepath.Base(p) {
			t.Errorf("cache file %s not repaired (sha256 %s)", p, got)
		}
	}
}

func mustHash(t *testing.T, s string) v1.Hash {
	t.Helper()
	h, err := v1.NewHash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestPackageCacheFromLayout: an OCI image layout written by another tool
// (go-containerregistry's layout package, as `crane pull --format oci`)
// serves as the cache, and is not rewritten.
func TestPackageCacheFromLayout(t *testing.T) {
	cr := startCountingRegistry(t)
	imgs, idx := pushFixture(t, cr.host)
	images := pinned(t, append(imgs, idx))
	dir := t.TempDir()
	lp := filepath.Join(dir, "layout")
	l, err := layout.Write(lp, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range images {
		d, err := remote.Get(mustRef(t, im.Ref))
		if err != nil {
			t.Fatal(err)
		}
		if d.MediaType.IsIndex() {
			ii, _ := d.ImageIndex()
			err = l.AppendIndex(ii)
		} else {
			img, _ := d.Image()
			err = l.AppendImage(img)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	indexBefore, _ := os.ReadFile(filepath.Join(lp, IndexFile))
	cache, err := OpenCache(lp)
	if err != nil {
		t.Fatal(err)
	}
	cr.off.Store(true)
	res, err := WriteFile(ctx(t), filepath.Join(dir, "a.tgz"), PackageOptions{Images: images, Level: DefaultLevel, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if res.CachedBlobs != res.Blobs {
		t.Errorf("%d of %d blobs from the layout", res.CachedBlobs, res.Blobs)
	}
	if after, _ := os.ReadFile(filepath.Join(lp, IndexFile)); !bytes.Equal(after, indexBefore) {
		t.Errorf("the layout's index.json was rewritten")
	}
	if _, err := Verify(filepath.Join(dir, "a.tgz"), Limits{}, nil); err != nil {
		t.Errorf("verify: %v", err)
	}
}

// TestPackageCacheConcurrent: two packagings share one cold cache.
func TestPackageCacheConcurrent(t *testing.T) {
	cr := startCountingRegistry(t)
	imgs, idx := pushFixture(t, cr.host)
	images := pinned(t, append(imgs, idx))
	dir := t.TempDir()
	cache, err := OpenCache(filepath.Join(dir, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = WriteFile(ctx(t), filepath.Join(dir, string(rune('a'+i))+".tgz"), PackageOptions{Images: images, Level: DefaultLevel, Cache: cache})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	want := sha256File(t, filepath.Join(dir, "a.tgz"))
	for _, n := range []string{"b", "c", "d"} {
		if got := sha256File(t, filepath.Join(dir, n+".tgz")); got != want {
			t.Errorf("%s.tgz differs from a.tgz", n)
		}
	}
	cr.off.Store(true)
	res, err := WriteFile(ctx(t), filepath.Join(dir, "warm.tgz"), PackageOptions{Images: images, Level: DefaultLevel, Cache: cache})
	if err != nil || res.CachedBlobs != res.Blobs {
		t.Fatalf("after concurrent runs, the cache lacks something: %v", err)
	}
}

func TestOpenCacheErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, LayoutFile), []byte(`{"imageLayoutVersion":"9.9"}`), 0o644)
	if _, err := OpenCache(bad); err == nil || !strings.Contains(err.Error(), "not an OCI image layout 1.0.0") {
		t.Errorf("layout version 9.9: %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := OpenCache(file); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("a file as cache: %v", err)
	}
	// A checkout (or any directory with files but no oci-layout) is not
	// turned into a cache; an empty one, or one holding only temporary
	// files of an interrupted first run, is.
	checkout := filepath.Join(dir, "checkout")
	os.MkdirAll(checkout, 0o755)
	os.WriteFile(filepath.Join(checkout, "README.md"), []byte("hi"), 0o644)
	if _, err := OpenCache(checkout); err == nil || !strings.Contains(err.Error(), "neither empty nor an OCI image layout (it has README.md") {
		t.Errorf("a non-empty directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(checkout, "blobs")); !os.IsNotExist(err) {
		t.Errorf("blobs/ was created in a directory refused as cache")
	}
	interrupted := filepath.Join(dir, "interrupted")
	os.MkdirAll(interrupted, 0o755)
	os.WriteFile(filepath.Join(interrupted, cacheTempPrefix+"1"), nil, 0o644)
	if _, err := OpenCache(interrupted); err != nil {
		t.Errorf("a directory with only a temporary file: %v", err)
	}
	c, err := OpenCache(filepath.Join(dir, "new"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := layout.FromPath(c.Dir()); err != nil {
		t.Errorf("a new cache is not an OCI image layout: %v", err)
	}
}

// TestOpenCacheRemovesAbandoned: temporary files a killed run left behind
// go once they have not been written for a day; a recent one (a run in
// progress) and every blob stay.
func TestOpenCacheRemovesAbandoned(t *testing.T) {
	dir := t.TempDir()
	c, err := OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	blobs := filepath.Join(c.Dir(), "blobs", "sha256")
	old, recent := filepath.Join(blobs, cacheTempPrefix+"old"), filepath.Join(blobs, cacheTempPrefix+"recent")
	blob := filepath.Join(blobs, strings.Repeat("ab", 32))
	for _, p := range []string{old, recent, blob} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	longAgo := time.Now().Add(-abandonedAfter - time.Hour)
	for _, p := range []string{old, blob} {
		if err := os.Chtimes(p, longAgo, longAgo); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := OpenCache(dir); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{old: false, recent: true, blob: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

// TestPackageCacheRepairsTaggedManifest: a manifest named by a tag is read
// from the registry (a tag can move); a damaged copy of it in the cache is
// replaced by what the registry served.
func TestPackageCacheRepairsTaggedManifest(t *testing.T) {
	host := startRegistry(t)
	imgs, _ := pushFixture(t, host)
	dir := t.TempDir()
	cache, err := OpenCache(filepath.Join(dir, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	pack := func() *PackageResult {
		t.Helper()
		res, err := WriteFile(ctx(t), filepath.Join(dir, "a.tgz"), PackageOptions{Images: []Image{{Ref: imgs[0]}}, Level: DefaultLevel, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := pack()
	p := filepath.Join(cache.Dir(), "blobs", "sha256", strings.TrimPrefix(res.Images[0].Digest, "sha256:"))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("the tagged manifest was not cached: %v", err)
	}
	data[len(data)/2] ^= 0xff
	os.WriteFile(p, data, 0o644)
	pack()
	if got := sha256File(t, p); got != filepath.Base(p) {
		t.Errorf("the damaged manifest stayed in the cache")
	}
}
