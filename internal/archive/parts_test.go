package archive

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// recorder is the in-process registry behind a log of the requests it
// answered (method, path, status), with an injected failure: when fail
// returns true for a request, it is answered 400 (not retried) after half
// its body was read.
type recorder struct {
	host string
	mu   sync.Mutex
	log  []string // "METHOD PATH STATUS"
	fail func(r *http.Request) bool
	// inflight counts the requests being served; idle is signalled when
	// one ends. A client may have read a whole answer before its handler
	// returns and logs it: count and reset wait for the handlers first.
	inflight int
	idle     *sync.Cond
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(c int) { w.code = c; w.ResponseWriter.WriteHeader(c) }

func startRecorder(t *testing.T) *recorder {
	t.Helper()
	rc := &recorder{}
	rc.idle = sync.NewCond(&rc.mu)
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.inflight++
		fail := rc.fail != nil && rc.fail(r)
		rc.mu.Unlock()
		sw := &statusWriter{ResponseWriter: w, code: 200}
		if fail {
			_, _ = io.CopyN(io.Discard, r.Body, r.ContentLength/2)
			http.Error(sw, "failure injected by the test", http.StatusBadRequest)
		} else {
			reg.ServeHTTP(sw, r)
		}
		rc.mu.Lock()
		rc.log = append(rc.log, fmt.Sprintf("%s %s?%s %d", r.Method, r.URL.Path, r.URL.RawQuery, sw.code))
		rc.inflight--
		rc.idle.Broadcast()
		rc.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	rc.host = strings.TrimPrefix(s.URL, "http://")
	return rc
}

// count returns how many logged requests contain every one of parts, once
// no request is being served.
func (rc *recorder) count(parts ...string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for rc.inflight > 0 {
		rc.idle.Wait()
	}
	n := 0
next:
	for _, l := range rc.log {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		n++
	}
	return n
}

func (rc *recorder) reset(fail func(r *http.Request) bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for rc.inflight > 0 {
		rc.idle.Wait()
	}
	rc.log, rc.fail = nil, fail
}

// bigFixture pushes two images to host whose 8 layers (40 KiB of random
// bytes each, incompressible) fill a 64 KiB part each.
func bigFixture(t *testing.T, host string) []Image {
	t.Helper()
	var out []Image
	for i, repo := range []string{"example/big-operator:v1", "example/big-worker:v1"} {
		var layers []v1.Layer
		for range 4 {
			l, err := random.Layer(40<<10, types.OCILayer)
			if err != nil {
				t.Fatal(err)
			}
			layers = append(layers, l)
		}
		img, err := mutate.AppendLayers(empty.Image, layers...)
		if err != nil {
			t.Fatal(err)
		}
		ref := host + "/" + repo
		if err := remote.Write(mustRef(t, ref), img); err != nil {
			t.Fatal(err)
		}
		out = append(out, Image{Ref: ref, Bundle: i == 0})
	}
	return out
}

// TestSplitArchive: --max-size splits an archive into 5+ parts; verify and
// push name a part that is missing or has a byte flipped; all parts push
// the same digests as the archive in one file.
func TestSplitArchive(t *testing.T) {
	src := startRegistry(t)
	images := bigFixture(t, src)
	dir := t.TempDir()
	out := filepath.Join(dir, "site.tgz")
	o := PackageOptions{Images: images, Files: []File{{Path: "op/1.0.0/manifest.yaml", Data: []byte(strings.ReplaceAll(testManifest, "HOST", src))}}, Level: DefaultLevel}
	res, err := WriteParts(ctx(t), out, SplitOptions{MaxSize: 64 << 10}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Parts) < 5 {
		t.Fatalf("%d parts, want 5 or more", len(res.Parts))
	}
	for i, p := range res.Parts {
		st, err := os.Stat(filepath.Join(dir, p.Name))
		if err != nil || st.Size() != p.Size || st.Size() > 64<<10 || p.Name != filepath.Base(PartPath(out, i+1)) {
			t.Errorf("part %d: %+v (%v)", i+1, p, err)
		}
		if sum, _, _ := readChecksum(filepath.Join(dir, p.Name)); sum != p.SHA256 {
			t.Errorf("part %d: .sha256 says %s, index %s", i+1, sum, p.SHA256)
		}
	}
	t.Logf("%d parts of %s: %d blobs", len(res.Parts), Size(64<<10), res.Blobs)
	for _, p := range []string{PartsPath(out), dir} {
		v, err := Verify(p, Limits{}, nil)
		if err != nil {
			t.Fatalf("verify %s: %v", p, err)
		}
		if v.Contents.Blobs != res.Blobs || len(v.Parts) != len(res.Parts) {
			t.Errorf("verify %s: %d blobs, %d parts", p, v.Contents.Blobs, len(v.Parts))
		}
	}
	whole := filepath.Join(t.TempDir(), "whole.tgz")
	if _, err := WriteFile(ctx(t), whole, o); err != nil {
		t.Fatal(err)
	}

	// One part missing: named by verify and push, nothing pushed.
	third := filepath.Join(dir, res.Parts[2].Name)
	data, _ := os.ReadFile(third)
	os.Remove(third)
	dst := startRegistry(t)
	want := fmt.Sprintf("part 3 of %d (%s) is missing", len(res.Parts), res.Parts[2].Name)
	if _, err := Verify(dir, Limits{}, nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("verify without part 3: %v", err)
	}
	if _, err := Push(ctx(t), PartsPath(out), PushOptions{Map: mapTo(dst, "x")}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("push without part 3: %v", err)
	}
	os.WriteFile(third, data, 0o644)

	// One byte flipped in part 2: named.
	second := filepath.Join(dir, res.Parts[1].Name)
	good, _ := os.ReadFile(second)
	bad := append([]byte(nil), good...)
	bad[len(bad)/2] ^= 0x40
	os.WriteFile(second, bad, 0o644)
	want = fmt.Sprintf("%s (part 2 of %d)", second, len(res.Parts))
	if _, err := Verify(PartsPath(out), Limits{}, nil); err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrCorrupt) {
		t.Errorf("verify with a byte flipped in part 2: %v", err)
	}
	if _, err := Push(ctx(t), dir, PushOptions{Map: mapTo(dst, "x")}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("push with a byte flipped in part 2: %v", err)
	}
	for _, im := range images {
		d, _ := mapTo(dst, "x")(im.Ref)
		if _, err := remote.Head(d); err == nil {
			t.Errorf("%s is tagged after a push of a damaged part", d)
		}
	}
	os.WriteFile(second, good, 0o644)

	// All parts: the same destination digests as the archive in one file.
	split, err := Push(ctx(t), dir, PushOptions{Map: mapTo(dst, "x"), TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dst2 := startRegistry(t)
	one, err := Push(ctx(t), whole, PushOptions{Map: mapTo(dst2, "x"), TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(split.Images) != len(one.Images) || split.BlobsPushed+split.BlobsSkipped != one.BlobsPushed {
		t.Fatalf("split pushed %d images %d blobs, whole %d and %d", len(split.Images), split.BlobsPushed, len(one.Images), one.BlobsPushed)
	}
	for i := range split.Images {
		a, _ := remote.Head(mustRef(t, split.Images[i].Destination))
		b, _ := remote.Head(mustRef(t, one.Images[i].Destination))
		if a == nil || b == nil || a.Digest != b.Digest {
			t.Errorf("%s: split %v, whole %v", split.Images[i].Source, a, b)
		}
	}
}

// TestSplitOversizeBlob: a blob larger than a part gets one of its own
// with a warning; --strict-size refuses, naming the blob and its image.
func TestSplitOversizeBlob(t *testing.T) {
	src := startRegistry(t)
	l, _ := random.Layer(100<<10, types.OCILayer)
	img, _ := mutate.AppendLayers(empty.Image, l)
	ref := src + "/example/huge:v1"
	if err := remote.Write(mustRef(t, ref), img); err != nil {
		t.Fatal(err)
	}
	ld, _ := l.Digest()
	out := filepath.Join(t.TempDir(), "h.tgz")
	o := PackageOptions{Images: []Image{{Ref: ref}}}
	_, err := WriteParts(ctx(t), out, SplitOptions{MaxSize: 64 << 10, Strict: true}, o)
	var se *SizeError
	if !errors.As(err, &se) || se.Blob != ld.String() || se.Image != ref {
		t.Fatalf("strict: %v", err)
	}
	if _, err := os.Stat(PartPath(out, 1)); err == nil {
		t.Error("strict refusal wrote a part")
	}
	res, err := WriteParts(ctx(t), out, SplitOptions{MaxSize: 64 << 10}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], ld.String()) || !strings.Contains(res.Warnings[0], ref) {
		t.Errorf("warnings %v", res.Warnings)
	}
	if len(res.Parts) != 2 || res.Parts[1].Blobs != 1 {
		t.Errorf("parts %+v: the large blob alone in the second", res.Parts)
	}
	if _, err := Verify(PartsPath(out), Limits{}, nil); err != nil {
		t.Fatal(err)
	}
}
