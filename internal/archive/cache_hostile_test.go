//go:build unix

package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/operator-publish/publish/internal/testenv"
)

// cacheFixture is the fixture's images pinned by digest, the sha256 of
// their archive made without a cache, and a cache filled by a cold run.
type cacheFixture struct {
	cr     *countingRegistry
	images []Image
	plain  string
	cache  *Cache
}

func newCacheFixture(t *testing.T) *cacheFixture {
	t.Helper()
	cr := startCountingRegistry(t)
	imgs, idx := pushFixture(t, cr.host)
	f := &cacheFixture{cr: cr, images: pinned(t, append(imgs, idx))}
	_, f.plain = f.pack(t, nil)
	c, err := OpenCache(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	f.cache = c
	if _, sum := f.pack(t, c); sum != f.plain {
		t.Fatal("cold cache: the archive differs")
	}
	return f
}

// pack writes the archive (to no file) and returns its sha256.
func (f *cacheFixture) pack(t *testing.T, c *Cache) (*PackageResult, string) {
	t.Helper()
	res, err := Package(ctx(t), io.Discard, PackageOptions{Images: f.images, Level: DefaultLevel, Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	return res, res.SHA256
}

// cacheFiles lists blobs/sha256 of the cache, largest first (a layer).
func cacheFiles(t *testing.T, c *Cache) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(c.Dir(), "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	size := map[string]int64{}
	for _, e := range ents {
		p := filepath.Join(c.Dir(), "blobs", "sha256", e.Name())
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, p)
			size[p] = st.Size()
		}
	}
	sort.Slice(out, func(i, j int) bool { return size[out[i]] > size[out[j]] })
	return out
}

// imageManifest is a cached image manifest of the fixture.
func imageManifest(t *testing.T, c *Cache) string {
	t.Helper()
	for _, p := range cacheFiles(t, c) {
		if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(`"schemaVersion"`)) && bytes.Contains(data, []byte(`"layers"`)) && bytes.Contains(data, []byte(`"config"`)) {
			return p
		}
	}
	t.Fatal("no image manifest in the cache")
	return ""
}

// checkCache fails when a file of blobs/sha256 does not hash to its name
// (a wrong blob renamed into place) or a temporary file is left.
func checkCache(t *testing.T, c *Cache) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(c.Dir(), "blobs", "sha256"))
	for _, e := range ents {
		p := filepath.Join(c.Dir(), "blobs", "sha256", e.Name())
		if strings.HasPrefix(e.Name(), cacheTempPrefix) {
			t.Errorf("temporary file left in the cache: %s", e.Name())
			continue
		}
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			if got := sha256File(t, p); got != e.Name() {
				t.Errorf("cache file %s holds content of sha256 %s", e.Name(), got)
			}
		}
	}
}

// TestCacheSymlinkBlob: a blob of the cache that is a symbolic link is
// used only when what it leads to verifies (it may lead anywhere: a file of
// the right size outside the cache is not put into an archive as the blob);
// the link, not its target, is replaced by the registry's copy.
func TestCacheSymlinkBlob(t *testing.T) {
	f := newCacheFixture(t)
	layer := cacheFiles(t, f.cache)[0]
	good, _ := os.ReadFile(layer)
	outside := filepath.Join(t.TempDir(), "outside")
	secret := bytes.Repeat([]byte("s"), len(good))
	os.WriteFile(outside, secret, 0o644)
	for _, verify := range []bool{false, true} {
		f.cache.Verify = verify
		os.Remove(layer)
		if err := os.Symlink(outside, layer); err != nil {
			t.Fatal(err)
		}
		res, sum := f.pack(t, f.cache)
		if sum != f.plain || res.CachedBlobs != res.Blobs-1 {
			t.Errorf("verify %v: a symlink to a file of the right size outside the cache: %d of %d blobs cached, same archive: %v", verify, res.CachedBlobs, res.Blobs, sum == f.plain)
		}
		if data, _ := os.ReadFile(outside); !bytes.Equal(data, secret) {
			t.Fatalf("the symlink's target was changed")
		}
		if st, err := os.Lstat(layer); err != nil || !st.Mode().IsRegular() {
			t.Errorf("verify %v: the symlink was not replaced by the registry's blob", verify)
		}
	}
	// A symlink to the right content (a store deduplicated by links) is
	// used, once hashed.
	f.cache.Verify = false
	os.WriteFile(outside, good, 0o644)
	os.Remove(layer)
	os.Symlink(outside, layer)
	f.cr.off.Store(true)
	defer f.cr.off.Store(false)
	if res, sum := f.pack(t, f.cache); sum != f.plain || res.CachedBlobs != res.Blobs {
		t.Errorf("a symlink to the blob's content: %d of %d blobs cached, same archive: %v", res.CachedBlobs, res.Blobs, sum == f.plain)
	}
	checkCache(t, f.cache)
}

// TestCacheSpecialFiles: a FIFO, a device or a directory where the cache
// should hold a blob or a manifest neither blocks nor goes into the
// archive; leftovers of an interrupted run (.partial-*) are not used and
// break nothing.
func TestCacheSpecialFiles(t *testing.T) {
	f := newCacheFixture(t)
	files := cacheFiles(t, f.cache)
	layer, manifest := files[0], imageManifest(t, f.cache)
	sha := filepath.Join(f.cache.Dir(), "blobs", "sha256")
	for _, tc := range []struct {
		name string
		make func(p string) error
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"symlink to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"directory", func(p string) error { return os.MkdirAll(filepath.Join(p, "x"), 0o755) }},
		{"empty file", func(p string) error { return os.WriteFile(p, nil, 0o644) }},
		{"dangling symlink", func(p string) error { return os.Symlink(filepath.Join(sha, "nowhere"), p) }},
	} {
		for _, verify := range []bool{false, true} {
			f.cache.Verify = verify
			for _, p := range []string{layer, manifest} {
				os.RemoveAll(p)
				if err := tc.make(p); err != nil {
					t.Fatal(err)
				}
			}
			// Leftovers of a killed run, named as ours are.
			os.WriteFile(filepath.Join(sha, cacheTempPrefix+"123"), []byte("half a blob"), 0o600)
			os.MkdirAll(filepath.Join(sha, cacheTempPrefix+"dir"), 0o755)
			res, sum := f.pack(t, f.cache)
			if sum != f.plain {
				t.Errorf("%s (verify %v): the archive differs", tc.name, verify)
			}
			if tc.name != "directory" && res.CachedBlobs != res.Blobs-1 {
				t.Errorf("%s (verify %v): %d of %d blobs cached", tc.name, verify, res.CachedBlobs, res.Blobs)
			}
			for _, p := range []string{filepath.Join(sha, cacheTempPrefix+"123"), filepath.Join(sha, cacheTempPrefix+"dir")} {
				if _, err := os.Stat(p); err != nil {
					t.Errorf("%s: a leftover was removed: %v", tc.name, err)
				}
				os.RemoveAll(p)
			}
			checkCache(t, f.cache)
		}
	}
}

// TestOpenCacheHostile: a bad oci-layout is refused without quoting it (a
// link may lead to a file of credentials), without blocking on a FIFO or
// reading a device without end; a path under a file is an error; extra
// fields in oci-layout and a garbage index.json (never read nor rewritten)
// are fine.
func TestOpenCacheHostile(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "config.json")
	os.WriteFile(secret, []byte(`{"auths":{"r.example.com":{"auth":"dXNlcjpodW50ZXIy"}}}`), 0o600)
	for name, make := range map[string]func(p string) error{
		"link to a docker config": func(p string) error { return os.Symlink(secret, p) },
		"fifo":                    func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"link to a device":        func(p string) error { return os.Symlink("/dev/zero", p) },
		"directory":               func(p string) error { return os.Mkdir(p, 0o755) },
		"number":                  func(p string) error { return os.WriteFile(p, []byte(`{"imageLayoutVersion":1}`), 0o644) },
	} {
		c := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		os.Mkdir(c, 0o755)
		if err := make(filepath.Join(c, LayoutFile)); err != nil {
			t.Fatal(err)
		}
		_, err := OpenCache(c)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(c, LayoutFile)) || strings.Contains(err.Error(), "dXNlcjpodW50ZXIy") {
			t.Errorf("oci-layout is a %s: %v", name, err)
		}
	}
	under := filepath.Join(secret, "cache")
	if _, err := OpenCache(under); err == nil || !strings.Contains(err.Error(), under) {
		t.Errorf("a cache under a file: %v", err)
	}
	ok := filepath.Join(dir, "ok")
	os.Mkdir(ok, 0o755)
	os.WriteFile(filepath.Join(ok, LayoutFile), []byte(`{"imageLayoutVersion":"1.0.0","x-tool":{"v":2}}`), 0o644)
	os.WriteFile(filepath.Join(ok, IndexFile), []byte("garbage"), 0o644)
	c, err := OpenCache(ok)
	if err != nil || c.Err() != nil {
		t.Fatalf("oci-layout with extra fields: %v, %v", err, c.Err())
	}
	if data, _ := os.ReadFile(filepath.Join(ok, IndexFile)); string(data) != "garbage" {
		t.Errorf("index.json was rewritten")
	}
}

// TestPackageCacheUnwritable: a cache that cannot be written (read-only,
// or its blobs/sha256 under a file) is read as it is; the archive is the
// same, and the result says that nothing was added, and why.
func TestPackageCacheUnwritable(t *testing.T) {
	f := newCacheFixture(t)
	// blobs is a file: nothing can be read or written (this one works as
	// root too).
	dir := filepath.Join(t.TempDir(), "blobs-file")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, LayoutFile), []byte(layoutData), 0o644)
	os.WriteFile(filepath.Join(dir, "blobs"), nil, 0o644)
	c, err := OpenCache(dir)
	if err != nil || c.Err() == nil {
		t.Fatalf("a cache whose blobs is a file: %v, write error %v", err, c.Err())
	}
	res, sum := f.pack(t, c)
	if sum != f.plain || res.CachedBlobs != 0 || res.CacheAdded != 0 || res.CacheErr == nil || !strings.Contains(res.CacheErr.Error(), dir) {
		t.Errorf("blobs is a file: same archive %v, %d cached, %d added, error %v", sum == f.plain, res.CachedBlobs, res.CacheAdded, res.CacheErr)
	}
	// A read-only cache (not for root: root writes anyway) missing one blob.
	if os.Geteuid() == 0 {
		return
	}
	sha := filepath.Join(f.cache.Dir(), "blobs", "sha256")
	os.Remove(cacheFiles(t, f.cache)[0])
	os.Chmod(sha, 0o555)
	t.Cleanup(func() { os.Chmod(sha, 0o755) })
	ro, err := OpenCache(f.cache.Dir())
	if err != nil {
		t.Fatal(err)
	}
	res, sum = f.pack(t, ro)
	if sum != f.plain || res.CachedBlobs != res.Blobs-1 || res.CacheAdded != 0 || res.CacheErr == nil {
		t.Errorf("read-only cache: same archive %v, %d of %d cached, %d added, error %v", sum == f.plain, res.CachedBlobs, res.Blobs, res.CacheAdded, res.CacheErr)
	}
}

// diskFullEnv carries, to the child process of TestPackageCacheDiskFull,
// the cache directory and the images (JSON) to package under a file size
// limit.
const diskFullEnv = "PUBLISH_TEST_DISKFULL"

// diskFullResult is what the child reports of its Package.
type diskFullResult struct {
	SHA256          string
	CacheAdded      int
	Blobs           int
	CacheErr, Error string
}

// TestPackageCacheDiskFull: writes into the cache fail half-way (a file
// size limit, as a full disk would): the archive is the same, no blob that
// was not written whole is renamed into place, no temporary file is left,
// and the result says so. The next run, with room, completes the cache.
// The limit is set in a child process (this test binary run again for
// this test alone): a limit on this process would also fail the writes of
// the test framework's own log.
func TestPackageCacheDiskFull(t *testing.T) {
	if arg := os.Getenv(diskFullEnv); arg != "" {
		diskFullChild(arg)
		return
	}
	f := newCacheFixture(t)
	c, err := OpenCache(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	arg, _ := json.Marshal(map[string]any{"cache": c.Dir(), "images": f.images})
	cmd := exec.Command(os.Args[0], "-test.run=^TestPackageCacheDiskFull$")
	cmd.Env = append(os.Environ(), diskFullEnv+"="+string(arg))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	var res diskFullResult
	if err := json.Unmarshal(out[:bytes.IndexByte(out, '\n')], &res); err != nil {
		if strings.Contains(string(out), "skip:") {
			testenv.Skip(t, strings.TrimSpace(string(out)))
		}
		t.Fatalf("the child said %q: %v", out, err)
	}
	if res.Error != "" {
		t.Fatal(res.Error)
	}
	if res.SHA256 != f.plain {
		t.Errorf("the archive differs when the cache cannot be written")
	}
	if res.CacheErr == "" || res.CacheAdded == 0 || res.CacheAdded >= res.Blobs {
		t.Errorf("disk full: %d of %d blobs added, error %q", res.CacheAdded, res.Blobs, res.CacheErr)
	}
	checkCache(t, c)
	if res, _ := f.pack(t, c); res.CacheErr != nil || res.CachedBlobs+res.CacheAdded != res.Blobs {
		t.Errorf("after the disk-full run: %d cached, %d added of %d, error %v", res.CachedBlobs, res.CacheAdded, res.Blobs, res.CacheErr)
	}
	f.cr.off.Store(true)
	if res, sum := f.pack(t, c); sum != f.plain || res.CachedBlobs != res.Blobs {
		t.Errorf("the cache was not completed: %d of %d blobs", res.CachedBlobs, res.Blobs)
	}
	f.cr.off.Store(false)
	checkCache(t, c)
}

// diskFullChild is the child of TestPackageCacheDiskFull: it packages the
// images of arg into the cache of arg under a file size limit of 1000
// bytes (manifests and small blobs fit, layers of 1 KiB and more do not)
// and prints a diskFullResult as one JSON line, or "skip: why".
func diskFullChild(arg string) {
	var in struct {
		Cache  string
		Images []Image
	}
	if err := json.Unmarshal([]byte(arg), &in); err != nil {
		fmt.Printf("{\"Error\":%q}\n", err.Error())
		return
	}
	c, err := OpenCache(in.Cache)
	if err != nil {
		fmt.Printf("{\"Error\":%q}\n", err.Error())
		return
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("skip: getrlimit RLIMIT_FSIZE:", err)
		return
	}
	lim.Cur = 1000
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("skip: setrlimit RLIMIT_FSIZE:", err)
		return
	}
	res, err := Package(context.Background(), io.Discard, PackageOptions{Images: in.Images, Level: DefaultLevel, Cache: c})
	out := diskFullResult{}
	if err != nil {
		out.Error = err.Error()
	} else {
		out.SHA256, out.CacheAdded, out.Blobs = res.SHA256, res.CacheAdded, res.Blobs
		if res.CacheErr != nil {
			out.CacheErr = res.CacheErr.Error()
		}
	}
	data, _ := json.Marshal(out)
	fmt.Println(string(data))
}

// TestPackageCacheMediaType: a registry that serves a manifest with a
// Content-Type other than its mediaType field (the in-process registry
// keeps whatever was pushed) gives the same archive from the registry and
// from the cache, which knows only the bytes: the field wins.
func TestPackageCacheMediaType(t *testing.T) {
	cr := startCountingRegistry(t)
	imgs, _ := pushFixture(t, cr.host)
	d, err := remote.Get(mustRef(t, imgs[0]))
	if err != nil {
		t.Fatal(err)
	}
	if sniffMediaType(d.Manifest) != types.DockerManifestSchema2 {
		t.Fatalf("fixture: manifest of media type %s", sniffMediaType(d.Manifest))
	}
	ref := mustRef(t, cr.host+"/example/mislabelled:v1")
	// The blobs first (this puts the manifest with its right type), then
	// the manifest again, mislabelled.
	img, _ := d.Image()
	if err := remote.Write(ref.Context().Tag("blobs"), img); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPut, "http://"+cr.host+"/v2/example/mislabelled/manifests/v1", bytes.NewReader(d.Manifest))
	req.Header.Set("Content-Type", string(types.OCIManifestSchema1))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT: %v %v", err, resp)
	}
	resp.Body.Close()
	images := []Image{{Ref: ref.Context().Digest(d.Digest.String()).String()}}
	c, err := OpenCache(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	var sums []string
	for _, run := range []string{"cold", "warm"} {
		res, err := Package(ctx(t), io.Discard, PackageOptions{Images: images, Level: DefaultLevel, Cache: c})
		if err != nil {
			t.Fatalf("%s: %v", run, err)
		}
		if res.Images[0].MediaType != string(types.DockerManifestSchema2) {
			t.Errorf("%s: media type %s, want the mediaType field's %s", run, res.Images[0].MediaType, types.DockerManifestSchema2)
		}
		sums = append(sums, res.SHA256)
	}
	if sums[0] != sums[1] {
		t.Errorf("the archive from the cache differs from the registry's")
	}
}

// TestPackageCacheBadManifest: a cached manifest larger than the 4 MiB
// limit, not JSON, or a FIFO is read from the registry instead, and
// replaced in the cache (it was left there, and read again every run).
func TestPackageCacheBadManifest(t *testing.T) {
	f := newCacheFixture(t)
	p := imageManifest(t, f.cache)
	good, _ := os.ReadFile(p)
	for name, make := range map[string]func() error{
		"5 MiB":    func() error { return os.WriteFile(p, bytes.Repeat([]byte("{"), 5<<20), 0o644) },
		"not JSON": func() error { return os.WriteFile(p, []byte("not json"), 0o644) },
		"fifo":     func() error { return syscall.Mkfifo(p, 0o644) },
	} {
		os.Remove(p)
		if err := make(); err != nil {
			t.Fatal(err)
		}
		mans := f.cr.manifest.Load()
		if _, sum := f.pack(t, f.cache); sum != f.plain || f.cr.manifest.Load() != mans+1 {
			t.Errorf("%s: same archive %v, %d manifest reads", name, sum == f.plain, f.cr.manifest.Load()-mans)
		}
		if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s: the cached manifest was not replaced", name)
		} else if data, _ := os.ReadFile(p); !bytes.Equal(data, good) {
			t.Errorf("%s: the cached manifest was not replaced", name)
		}
	}
}

// cancellingTransport cancels the packaging at the first blob request and
// answers it anyway once the cancellation reached it (a reply that arrives
// as the user presses Ctrl-C); it counts the requests in flight and the
// bodies it returned that are not closed yet.
type cancellingTransport struct {
	cancel   func()
	once     sync.Once
	inflight atomic.Int64
	open     atomic.Int64
}

type countedBody struct {
	io.ReadCloser
	t    *cancellingTransport
	once sync.Once
}

func (b *countedBody) Close() error {
	b.once.Do(func() { b.t.open.Add(-1) })
	return b.ReadCloser.Close()
}

func (t *cancellingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.inflight.Add(1)
	defer t.inflight.Add(-1)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !strings.Contains(r.URL.Path, "/blobs/") {
		return resp, err
	}
	first := false
	t.once.Do(func() { first = true })
	if first {
		t.cancel()
		<-r.Context().Done()
	}
	t.open.Add(1)
	resp.Body = &countedBody{ReadCloser: resp.Body, t: t}
	return resp, nil
}

// TestPackageCacheCancel: when the context is cancelled in the middle,
// Package returns only once every blob request it opened ahead is done and
// closed: no request or temporary file of the cache outlives it (the CLI
// exits right after).
func TestPackageCacheCancel(t *testing.T) {
	cr := startCountingRegistry(t)
	imgs, idx := pushFixture(t, cr.host)
	images := pinned(t, append(imgs, idx))
	for range 20 {
		c, err := OpenCache(filepath.Join(t.TempDir(), "cache"))
		if err != nil {
			t.Fatal(err)
		}
		pctx, cancel := context.WithCancel(ctx(t))
		tr := &cancellingTransport{cancel: cancel}
		_, err = Package(pctx, io.Discard, PackageOptions{Images: images, Level: DefaultLevel, Cache: c, Remote: []remote.Option{remote.WithTransport(tr)}})
		n, open := tr.inflight.Load(), tr.open.Load()
		left, _ := filepath.Glob(filepath.Join(c.Dir(), "blobs", "sha256", cacheTempPrefix+"*"))
		cancel()
		if err == nil {
			t.Fatal("a cancelled Package succeeded")
		}
		if n != 0 || open != 0 || len(left) != 0 {
			t.Fatalf("when Package returned: %d requests in flight, %d bodies open, temporary files %v", n, open, left)
		}
		checkCache(t, c)
	}
}

// TestPackageCacheDamagedBlobCaught: a cached blob of the right size but
// the wrong content is trusted by design (as containerd's content store
// does); verify and push refuse the archive, naming the blob, and push
// tags nothing.
func TestPackageCacheDamagedBlobCaught(t *testing.T) {
	f := newCacheFixture(t)
	layer := cacheFiles(t, f.cache)[0]
	data, _ := os.ReadFile(layer)
	data[len(data)/2] ^= 0xff
	os.WriteFile(layer, data, 0o644)
	out := filepath.Join(t.TempDir(), "damaged.tgz")
	if _, err := WriteFile(ctx(t), out, PackageOptions{Images: f.images, Level: DefaultLevel, Cache: f.cache}); err != nil {
		t.Fatal(err)
	}
	hex := filepath.Base(layer)
	// The archive matches its .sha256: the error says it was written so
	// (package again), not "copy it again".
	if _, err := Verify(out, Limits{}, nil); err == nil || !strings.Contains(err.Error(), hex) || !errors.Is(err, ErrWrittenDamaged) || errors.Is(err, ErrCorrupt) {
		t.Errorf("verify: %v", err)
	}
	// Without its .sha256, the tool cannot tell: copy it again.
	os.Remove(ChecksumPath(out))
	if _, err := Verify(out, Limits{}, nil); err == nil || !errors.Is(err, ErrCorrupt) {
		t.Errorf("verify without .sha256: %v", err)
	}
	sum := sha256File(t, out)
	os.WriteFile(ChecksumPath(out), []byte(sum+"  "+filepath.Base(out)+"\n"), 0o644)
	dst := startRegistry(t)
	_, err := Push(ctx(t), out, PushOptions{Map: mapTo(dst, "mirror"), TempDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "not the sha256:"+hex) || !strings.Contains(err.Error(), "--verify-cache") {
		t.Errorf("push: %v", err)
	}
	for _, im := range f.images {
		d, _ := mapTo(dst, "mirror")(im.Ref)
		if _, err := remote.Head(d); err == nil {
			t.Errorf("%s was pushed from a damaged archive", d)
		}
	}
}

// TestPackageCacheLyingSize: a manifest whose layer descriptor has the
// wrong size fails packaging (the registry sends more than it says), and
// does not remove the good copy of that layer from the cache.
func TestPackageCacheLyingSize(t *testing.T) {
	f := newCacheFixture(t)
	layer := cacheFiles(t, f.cache)[0]
	good, _ := os.ReadFile(layer)
	repo := strings.SplitN(f.images[0].Ref, "@", 2)[0]
	d, err := remote.Get(mustRef(t, f.images[0].Ref))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := v1.ParseManifest(bytes.NewReader(d.Manifest))
	for i := range m.Layers {
		if m.Layers[i].Digest.Hex == filepath.Base(layer) {
			m.Layers[i].Size--
		}
	}
	img := mustRef(t, repo+":lying")
	if err := remote.Put(img, rawManifest{raw: mustJSON(t, m), mt: d.MediaType}); err != nil {
		t.Fatal(err)
	}
	h, _ := remote.Head(img)
	_, err = Package(ctx(t), io.Discard, PackageOptions{Images: []Image{{Ref: repo + "@" + h.Digest.String()}}, Cache: f.cache})
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a layer of the wrong size: %v", err)
	}
	if data, _ := os.ReadFile(layer); !bytes.Equal(data, good) {
		t.Errorf("a manifest lying about a layer's size removed it from the cache")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
