package archive

import (
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/operator-publish/publish/internal/testenv"
)

// TestPackageResumesParts: a split package that fails mid-part (the source
// registry refuses a blob) leaves its complete parts; the next run keeps
// them and reads only the other parts' blobs (counted at the registry). A
// complete part damaged since is rewritten.
func TestPackageResumesParts(t *testing.T) {
	src := startRecorder(t)
	images := bigFixture(t, src.host)
	out := filepath.Join(t.TempDir(), "site.tgz")
	o := PackageOptions{Images: images}
	so := SplitOptions{MaxSize: 64 << 10}
	var gets atomic.Int32
	src.reset(func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") && gets.Add(1) > 5
	})
	if _, err := WriteParts(ctx(t), out, so, o); err == nil {
		t.Fatal("package with a failing registry succeeded")
	}
	done := 0
	for n := 1; ; n++ {
		if _, err := os.Stat(ChecksumPath(PartPath(out, n))); err != nil {
			break
		}
		done++
	}
	if _, err := os.Stat(PartsPath(out)); err == nil {
		t.Error("an interrupted package wrote the index")
	}
	src.reset(nil)
	res, err := WriteParts(ctx(t), out, so, o)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, p := range res.Parts[:done] {
		kept += p.Blobs
	}
	got := src.count("GET", "/blobs/")
	t.Logf("interrupted after %d of %d parts; resumed: %d parts kept (%d blobs), %d blob GETs for the other %d", done, len(res.Parts), res.PartsReused, kept, got, res.Blobs-kept)
	if done == 0 || done == len(res.Parts) || res.PartsReused != done || got != res.Blobs-kept {
		t.Errorf("resume kept %d parts of the %d complete; %d blob GETs, want %d", res.PartsReused, done, got, res.Blobs-kept)
	}
	if _, err := Verify(PartsPath(out), Limits{}, nil); err != nil {
		t.Fatal(err)
	}
	// A byte flipped in a complete part: that part is written again.
	p2 := PartPath(out, 2)
	data, _ := os.ReadFile(p2)
	data[len(data)/2] ^= 1
	os.WriteFile(p2, data, 0o644)
	src.reset(nil)
	res2, err := WriteParts(ctx(t), out, so, o)
	if err != nil {
		t.Fatal(err)
	}
	if res2.PartsReused != len(res.Parts)-1 || src.count("GET", "/blobs/") != res.Parts[1].Blobs || res2.SHA256 != res.SHA256 {
		t.Errorf("damaged part 2: %d parts kept of %d, %d blob GETs (want %d), index %s (was %s)", res2.PartsReused, len(res.Parts), src.count("GET", "/blobs/"), res.Parts[1].Blobs, res2.SHA256, res.SHA256)
	}
}

var uploadDigest = regexp.MustCompile(`digest=(sha256[^& ]+)`)

// completed lists the blob digests whose upload the registry finished
// (PUT …?digest=… answered 201).
func (rc *recorder) completed() map[string]bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for rc.inflight > 0 {
		rc.idle.Wait()
	}
	out := map[string]bool{}
	for _, l := range rc.log {
		if strings.HasPrefix(l, "PUT ") && strings.HasSuffix(l, " 201") {
			if m := uploadDigest.FindStringSubmatch(l); m != nil {
				d, _ := url.QueryUnescape(m[1])
				out[d] = true
			}
		}
	}
	return out
}

// TestPushResumesMidBlob: a push cut in the middle of a blob's upload (the
// registry drops it after half its bytes) resumes with the next run, which
// uploads only the blobs the registry did not complete (counted there).
func TestPushResumesMidBlob(t *testing.T) {
	src := startRegistry(t)
	images := bigFixture(t, src)
	out := filepath.Join(t.TempDir(), "site.tgz")
	pkg, err := WriteFile(ctx(t), out, PackageOptions{Images: images})
	if err != nil {
		t.Fatal(err)
	}
	dst := startRecorder(t)
	var uploads atomic.Int32
	dst.reset(func(r *http.Request) bool {
		return (r.Method == http.MethodPatch || r.Method == http.MethodPut) && strings.Contains(r.URL.Path, "/blobs/uploads/") && r.ContentLength > 0 && uploads.Add(1) == 4
	})
	o := PushOptions{Map: mapTo(dst.host, "x"), Jobs: 1, TempDir: t.TempDir()}
	if _, err := Push(ctx(t), out, o); err == nil {
		t.Fatal("push with an upload cut in the middle succeeded")
	}
	first := dst.completed()
	dst.reset(nil)
	res, err := Push(ctx(t), out, o)
	if err != nil {
		t.Fatal(err)
	}
	second := dst.completed()
	t.Logf("interrupted push completed %d of %d blobs; the resumed one uploaded %d, skipped %d", len(first), pkg.Blobs, len(second), res.BlobsSkipped)
	if len(first) == 0 || len(first) >= pkg.Blobs {
		t.Fatalf("the interrupted push completed %d of %d blobs", len(first), pkg.Blobs)
	}
	for d := range second {
		if first[d] {
			t.Errorf("blob %s sent again", d)
		}
	}
	if res.BlobsSkipped != len(first) || res.BlobsPushed != pkg.Blobs-len(first) || len(second) != res.BlobsPushed {
		t.Errorf("resumed: %d pushed, %d skipped; %d uploads completed at the registry", res.BlobsPushed, res.BlobsSkipped, len(second))
	}
}

// TestPushStreamedBlobDamaged: a layer over the in-memory size streams from
// the archive into its upload, and the registry hashes what it receives; a
// byte flipped in it fails the push as a damaged archive naming the entry
// (not a registry error): go-containerregistry's registry and the Debian
// docker-registry refuse the upload (DIGEST_INVALID), commit no blob with
// that digest, and nothing is tagged.
func TestPushStreamedBlobDamaged(t *testing.T) {
	src := startRegistry(t)
	l := newLayer(t, 3<<20)
	ld, _ := l.Digest()
	ref := src + "/example/large:v1"
	writeImage(t, ref, l)
	out := filepath.Join(t.TempDir(), "large.tgz")
	if _, err := WriteFile(ctx(t), out, PackageOptions{Images: []Image{{Ref: ref}}, Level: 0}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	data[len(data)/2] ^= 0x10 // inside the layer: stored
	os.WriteFile(out, data, 0o644)
	os.Remove(ChecksumPath(out))
	damaged := func(err error) {
		t.Helper()
		var re *RegistryError
		if err == nil || !errors.Is(err, ErrCorrupt) || errors.As(err, &re) || !strings.Contains(err.Error(), ld.Hex) {
			t.Fatalf("push of a damaged layer: %v", err)
		}
	}
	deb := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	_, err := Push(ctx(t), out, PushOptions{Map: mapTo(deb.Host, "x"), Remote: deb.Options(), Keychain: deb.Keychain(), Transport: deb.Transport()})
	damaged(err)
	req, _ := http.NewRequest(http.MethodHead, deb.URL()+"/v2/x/example/large/blobs/"+ld.String(), nil)
	req.SetBasicAuth(deb.Username, deb.Password)
	if resp, err := (&http.Client{Transport: deb.Transport()}).Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("docker-registry holds the damaged layer: %v %v", resp, err)
	}
	dst := startRecorder(t)
	_, err = Push(ctx(t), out, PushOptions{Map: mapTo(dst.host, "x")})
	damaged(err)
	if dst.completed()[ld.String()] || dst.count("PUT", "/manifests/") != 0 {
		t.Errorf("the registry committed the damaged layer or a manifest: %v", dst.completed())
	}
	// Intact, the same layer streams through.
	data[len(data)/2] ^= 0x10
	os.WriteFile(out, data, 0o644)
	res, err := Push(ctx(t), out, PushOptions{Map: mapTo(dst.host, "x")})
	if err != nil || res.BlobsPushed+res.BlobsSkipped != 2 || !dst.completed()[ld.String()] {
		t.Fatalf("push: %v %+v", err, res)
	}
}
