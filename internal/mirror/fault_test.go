package mirror_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/testenv"
)

// fastRetry keeps the backoff short in tests (Retry-After still applies).
var fastRetry = RetryPolicy{Attempts: 10, Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond}

// imageSet is a set of images in a source registry: refs relative to the
// registry host.
type imageSet struct {
	refs    []string // "repo:tag"
	signed  string   // the ref that has a cosign signature tag
	sigTag  string   // its signature tag
	indexes int
}

// pushImageSet pushes n images in n repositories (some nested) that share
// three base layers of layerSize bytes, every fifth one an index of two
// images, and a cosign signature tag for the first image.
func pushImageSet(t testing.TB, host string, opts []remote.Option, n int, layerSize int64) imageSet {
	t.Helper()
	var bases []v1.Layer
	for range 3 {
		l, err := random.Layer(layerSize, types.DockerLayer)
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, l)
	}
	mkImage := func(i int) v1.Image {
		own, err := random.Layer(layerSize/4+int64(i), types.DockerLayer)
		if err != nil {
			t.Fatal(err)
		}
		img, err := mutate.AppendLayers(empty.Image, bases[i%3], bases[(i+1)%3], own)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	var set imageSet
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		repo := fmt.Sprintf("set/app-%02d", i)
		if i%3 == 0 {
			repo = fmt.Sprintf("set/team/nested/app-%02d", i)
		}
		ref := repo + ":v1"
		set.refs = append(set.refs, ref)
		r, err := name.ParseReference(host + "/" + ref)
		if err != nil {
			t.Fatal(err)
		}
		if i%5 == 4 {
			set.indexes++
			idx := mutate.AppendManifests(empty.Index,
				mutate.IndexAddendum{Add: mkImage(i), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
				mutate.IndexAddendum{Add: mkImage(i + 1), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = remote.WriteIndex(r, idx, opts...) }()
			continue
		}
		img := mkImage(i)
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = remote.Write(r, img, opts...) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	// A cosign-style signature: an image manifest under sha256-<hex>.sig.
	first, err := name.ParseReference(host + "/" + set.refs[0])
	if err != nil {
		t.Fatal(err)
	}
	d, err := remote.Head(first, opts...)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := random.Image(200, 1)
	if err != nil {
		t.Fatal(err)
	}
	set.signed, set.sigTag = set.refs[0], d.Digest.Algorithm+"-"+d.Digest.Hex+".sig"
	if err := remote.Write(first.Context().Tag(set.sigTag), sig, opts...); err != nil {
		t.Fatal(err)
	}
	return set
}

// verifyCopy checks that dstHost/prefix/ref has the source digest of
// srcHost/ref, every child of an index too, and reads every blob of every
// image at the destination (go-containerregistry checks each digest).
func verifyCopy(t testing.TB, srcHost string, srcOpts []remote.Option, dstHost, prefix string, dstOpts []remote.Option, ref string) {
	t.Helper()
	sr, _ := name.ParseReference(srcHost + "/" + ref)
	dr, _ := name.ParseReference(dstHost + "/" + prefix + ref)
	sd, err := remote.Get(sr, srcOpts...)
	if err != nil {
		t.Fatalf("source %s: %v", sr, err)
	}
	dd, err := remote.Get(dr, dstOpts...)
	if err != nil {
		t.Fatalf("destination %s: %v", dr, err)
	}
	if sd.Digest != dd.Digest {
		t.Fatalf("%s: destination digest %s, source %s", dr, dd.Digest, sd.Digest)
	}
	var imgs []v1.Image
	if dd.MediaType.IsIndex() {
		idx, err := dd.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range im.Manifests {
			cd, err := remote.Get(dr.Context().Digest(c.Digest.String()), dstOpts...)
			if err != nil || cd.Digest != c.Digest {
				t.Fatalf("%s child %s at the destination: %v", dr, c.Digest, err)
			}
			img, err := cd.Image()
			if err != nil {
				t.Fatal(err)
			}
			imgs = append(imgs, img)
		}
	} else {
		img, err := dd.Image()
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	for _, img := range imgs {
		readImage(t, dr.String(), img)
	}
}

// TestMirrorThroughFaults mirrors a 30-image set between two Debian
// docker-registry instances, each behind a proxy that resets connections,
// answers 429 with Retry-After and 503, delays, stalls past the per-request
// timeout and truncates bodies; every digest must arrive intact.
func TestMirrorThroughFaults(t *testing.T) {
	srcReg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	dstReg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	set := pushImageSet(t, srcReg.Host, srcReg.Options(), 30, 32<<10)
	faults := testenv.FaultOptions{
		Rates: map[testenv.Fault]float64{
			testenv.FaultReset: 0.04, testenv.FaultTooMany: 0.02, testenv.FaultUnavailable: 0.04,
			testenv.FaultSlow: 0.04, testenv.FaultStall: 0.01, testenv.FaultTruncate: 0.05,
		},
		MaxPerKey:  1,
		RetryAfter: 1,
		SlowDelay:  50 * time.Millisecond,
		StallDelay: 3 * time.Second,
	}
	faults.Seed = 1
	srcProxy := testenv.StartFaultProxy(t, srcReg.URL(), srcReg.Transport(), faults)
	faults.Seed = 2
	dstProxy := testenv.StartFaultProxy(t, dstReg.URL(), dstReg.Transport(), faults)

	c, err := New(Options{DstRegistry: dstProxy.Host + "/mirror", Concurrency: 4, Retry: fastRetry, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var related []string
	for _, r := range set.refs {
		related = append(related, srcProxy.Host+"/"+r)
	}
	rep, err := c.Mirror(context.Background(), related, nil)
	if err != nil {
		t.Fatalf("mirror through faults: %v", err)
	}
	retries := 0
	for _, r := range rep.Images {
		retries += r.Retries
	}
	t.Logf("faults injected: source %v, destination %v; %d retries", srcProxy.Faults(), dstProxy.Faults(), retries)
	if len(rep.Images) != 30 || rep.Copied() != 30 {
		t.Fatalf("report: %d images, %d copied; want 30, 30", len(rep.Images), rep.Copied())
	}
	nFaults := 0
	for _, p := range []*testenv.FaultProxy{srcProxy, dstProxy} {
		for _, n := range p.Faults() {
			nFaults += n
		}
	}
	if nFaults < 10 || retries == 0 {
		t.Errorf("only %d faults and %d retries: the test did not test much", nFaults, retries)
	}
	for _, r := range set.refs {
		verifyCopy(t, srcReg.Host, srcReg.Options(), dstReg.Host, "mirror/", dstReg.Options(), r)
	}
	// The signature came along.
	verifyCopy(t, srcReg.Host, srcReg.Options(), dstReg.Host, "mirror/", dstReg.Options(), strings.Split(set.signed, ":")[0]+":"+set.sigTag)
}

// TestPermanentErrorsFailFast checks that what can never succeed is asked
// once: a missing source image (404), a destination that denies (403) or
// refuses the credentials (401), and the HTTP 500 distribution answers for a
// manifest with foreign layers.
func TestPermanentErrorsFailFast(t *testing.T) {
	srcReg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	dstReg := testenv.StartRegistry(t, testenv.RegistryOptions{Auth: true})
	src := testenv.StartFaultProxy(t, srcReg.URL(), srcReg.Transport(), testenv.FaultOptions{})
	dst := testenv.StartFaultProxy(t, dstReg.URL(), dstReg.Transport(), testenv.FaultOptions{Status: func(r *http.Request) int {
		if strings.Contains(r.URL.Path, "/denied/") {
			return http.StatusForbidden
		}
		return 0
	}})
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"p/app:v1", "p/denied/app:v1"} {
		if err := remote.Write(mustParse(t, srcReg.Ref(ref)), img, srcReg.Options()...); err != nil {
			t.Fatal(err)
		}
	}
	creds := Credentials{Username: dstReg.Username, Password: dstReg.Password}
	slow := RetryPolicy{Attempts: 5, Initial: time.Second, Max: time.Second}
	// newClient records every wait before a retry: there must be none.
	newClient := func(t *testing.T, o Options) *Client {
		t.Helper()
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		SetSleep(c, func(_ context.Context, d time.Duration) error {
			t.Errorf("waited %v to retry a permanent error", d)
			return nil
		})
		return c
	}

	tests := []struct {
		name   string
		ref    string
		creds  Credentials
		method string
		path   string // requests counted, at the source (404) or destination
		proxy  *testenv.FaultProxy
		msg    string
	}{
		{"404 source", src.Host + "/p/app:nope", creds, http.MethodHead, "/manifests/nope", src, "not found"},
		{"403 destination", src.Host + "/p/denied/app:v1", creds, "", "/m/p/denied/app/", dst, "403"},
		{"401 destination", src.Host + "/p/app:v1", Credentials{Username: dstReg.Username, Password: "wrong"}, "", "/m/p/app/", dst, "401"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src.ResetRequests()
			dst.ResetRequests()
			c := newClient(t, Options{DstRegistry: dst.Host + "/m", Dst: tc.creds, Retry: slow})
			_, err := c.Mirror(context.Background(), []string{tc.ref}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), tc.ref) {
				t.Fatalf("err = %v; want an error naming %s and %q", err, tc.ref, tc.msg)
			}
			if n := tc.proxy.Count(tc.method, tc.path); n != 1 {
				t.Errorf("%d requests %s *%s*, want 1 (no retry): %v", n, tc.method, tc.path, tc.proxy.Requests())
			}
		})
	}

	t.Run("foreign layer", func(t *testing.T) {
		// The in-process registry keeps foreign layers; distribution refuses
		// the manifest with HTTP 500 and MANIFEST_BLOB_UNKNOWN.
		inproc := startInProcess(t)
		foreign, err := random.Layer(300, types.DockerForeignLayer)
		if err != nil {
			t.Fatal(err)
		}
		fimg, err := mutate.Append(empty.Image, mutate.Addendum{Layer: foreign, URLs: []string{"https://example.com/layer.tar.gz"}, MediaType: types.DockerForeignLayer})
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(mustParse(t, inproc+"/win/app:v1"), fimg, remote.WithNondistributable); err != nil {
			t.Fatal(err)
		}
		ref := inproc + "/win/app:v1"

		dst.ResetRequests()
		c := newClient(t, Options{DstRegistry: dst.Host + "/m", Dst: creds, Retry: slow})
		_, err = c.Mirror(context.Background(), []string{ref}, nil)
		if err == nil || !strings.Contains(err.Error(), "--allow-nondistributable") {
			t.Fatalf("err = %v, want one naming --allow-nondistributable", err)
		}
		if n := dst.Count(http.MethodPut, "/manifests/") + dst.Count(http.MethodPost, "/blobs/uploads/"); n != 0 {
			t.Errorf("%d writes reached the destination", n)
		}

		dst.ResetRequests()
		c = newClient(t, Options{DstRegistry: dst.Host + "/m", Dst: creds, Retry: slow, AllowNondistributable: true})
		_, err = c.Mirror(context.Background(), []string{ref}, nil)
		if err == nil || !strings.Contains(err.Error(), "MANIFEST_BLOB_UNKNOWN") || !strings.Contains(err.Error(), "foreign layers") {
			t.Fatalf("err = %v, want distribution's refusal of foreign layers", err)
		}
		t.Logf("foreign layer: %v", err)
		if n := dst.Count(http.MethodPut, "/manifests/"); n != 1 {
			t.Errorf("%d manifest PUTs, want 1 (the 500 is not retried)", n)
		}
	})
}

func mustParse(t testing.TB, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRetryAfter checks that the wait before a retry after a 429 is at
// least the Retry-After the registry sent, also for blob uploads, which
// are started again rather than resent.
func TestRetryAfter(t *testing.T) {
	src, dst := startInProcess(t), startInProcess(t)
	img, err := random.Image(1024, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustParse(t, src+"/a/b:v1"), img); err != nil {
		t.Fatal(err)
	}
	proxy := testenv.StartFaultProxy(t, "http://"+dst, http.DefaultTransport, testenv.FaultOptions{
		Rates: map[testenv.Fault]float64{testenv.FaultTooMany: 1}, MaxPerKey: 1, RetryAfter: 7,
	})
	c, err := New(Options{DstRegistry: proxy.Host, Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var waits []time.Duration
	SetSleep(c, func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return nil
	})
	res, err := c.Copy(context.Background(), src+"/a/b:v1")
	if err != nil {
		t.Fatal(err)
	}
	n429 := proxy.Faults()[testenv.FaultTooMany]
	if n429 < 4 || len(waits) != n429 || res.Retries != n429 {
		t.Errorf("%d 429s, %d waits, %d retries reported; want one wait per 429", n429, len(waits), res.Retries)
	}
	for _, w := range waits {
		if w < 7*time.Second {
			t.Errorf("waited %v after a 429 with Retry-After: 7", w)
		}
	}
	verifyCopy(t, src, nil, dst, "", nil, "a/b:v1")

	t.Run("too long", func(t *testing.T) {
		p := testenv.StartFaultProxy(t, "http://"+dst, http.DefaultTransport, testenv.FaultOptions{
			Rates: map[testenv.Fault]float64{testenv.FaultTooMany: 1}, RetryAfter: 3600,
		})
		c, err := New(Options{DstRegistry: p.Host + "/x", Retry: fastRetry})
		if err != nil {
			t.Fatal(err)
		}
		SetSleep(c, func(context.Context, time.Duration) error { t.Error("slept"); return nil })
		_, err = c.Copy(context.Background(), src+"/a/b:v1")
		if err == nil || !strings.Contains(err.Error(), "retry after 1h0m0s") {
			t.Errorf("err = %v, want one saying the registry asks for an hour", err)
		}
		if n := len(p.Requests()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
}

// startInProcess starts go-containerregistry's in-process registry on a
// loopback port and returns its host.
func startInProcess(t testing.TB) string {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// readImage reads the config and every layer of img; go-containerregistry
// checks each blob against its digest as it is read.
func readImage(t testing.TB, what string, img v1.Image) {
	t.Helper()
	if _, err := img.RawConfigFile(); err != nil {
		t.Errorf("%s: config: %v", what, err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err == nil {
			_, err = io.Copy(io.Discard, rc)
			if cerr := rc.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			d, _ := l.Digest()
			t.Errorf("%s: layer %s: %v", what, d, err)
		}
	}
}

// TestMirrorRequestCounts counts the requests that reach the destination
// (a Debian docker-registry behind a proxy that only counts): on the first
// copy each unique blob is uploaded once and mounted into the other
// repositories that need it; the no-op rerun costs one manifest HEAD per
// image and one /v2/ ping.
func TestMirrorRequestCounts(t *testing.T) {
	srcReg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	dstReg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	set := pushImageSet(t, srcReg.Host, srcReg.Options(), 30, 16<<10)
	src := testenv.StartFaultProxy(t, srcReg.URL(), srcReg.Transport(), testenv.FaultOptions{})
	dst := testenv.StartFaultProxy(t, dstReg.URL(), dstReg.Transport(), testenv.FaultOptions{})

	// The unique blobs of the set, from the source's manifests.
	unique := map[string]bool{}
	var refs []string
	for _, r := range set.refs {
		refs = append(refs, src.Host+"/"+r)
		d, err := remote.Get(mustParse(t, srcReg.Ref(r)), srcReg.Options()...)
		if err != nil {
			t.Fatal(err)
		}
		var imgs []v1.Image
		if d.MediaType.IsIndex() {
			idx, _ := d.ImageIndex()
			im, _ := idx.IndexManifest()
			for _, c := range im.Manifests {
				img, err := idx.Image(c.Digest)
				if err != nil {
					t.Fatal(err)
				}
				imgs = append(imgs, img)
			}
		} else {
			img, _ := d.Image()
			imgs = append(imgs, img)
		}
		for _, img := range imgs {
			m, err := img.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			unique[m.Config.Digest.String()] = true
			for _, l := range m.Layers {
				unique[l.Digest.String()] = true
			}
		}
	}
	// The signature image's two blobs.
	sig, err := remote.Image(mustParse(t, srcReg.Ref(strings.Split(set.signed, ":")[0]+":"+set.sigTag)), srcReg.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	sm, _ := sig.Manifest()
	unique[sm.Config.Digest.String()] = true
	for _, l := range sm.Layers {
		unique[l.Digest.String()] = true
	}

	c, err := New(Options{DstRegistry: dst.Host + "/mirror", Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Mirror(context.Background(), refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied() != 30 {
		t.Fatalf("copied %d, want 30", rep.Copied())
	}
	patches := dst.Count(http.MethodPatch, "/blobs/uploads/")
	mounts := 0
	for _, r := range dst.Requests() {
		if r.Method == http.MethodPost && strings.Contains(r.Query, "from=") && r.Status == http.StatusCreated {
			mounts++
		}
	}
	t.Logf("first copy: %d destination requests, %d unique blobs, %d uploaded (PATCH), %d mounted", len(dst.Requests()), len(unique), patches, mounts)
	if patches != len(unique) {
		t.Errorf("%d blob uploads for %d unique blobs: each must be uploaded once", patches, len(unique))
	}
	if mounts == 0 {
		t.Error("no cross-repository mount")
	}
	for _, r := range set.refs {
		verifyCopy(t, srcReg.Host, srcReg.Options(), dstReg.Host, "mirror/", dstReg.Options(), r)
	}

	for _, tc := range []struct{ sigs, plain bool }{{false, false}, {true, false}, {false, true}} {
		sigs := tc.sigs
		src.ResetRequests()
		dst.ResetRequests()
		c, err := New(Options{DstRegistry: dst.Host + "/mirror", Concurrency: 4, SkipSignatures: !sigs, PlainHTTP: tc.plain})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := c.Mirror(context.Background(), refs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Copied() != 0 {
			t.Errorf("rerun copied %d", rep.Copied())
		}
		heads := dst.Count(http.MethodHead, "/manifests/")
		t.Logf("no-op rerun (signatures %v, plain HTTP given %v): %d destination requests (%d manifest HEADs), %d source requests", sigs, tc.plain, len(dst.Requests()), heads, len(src.Requests()))
		want := 30 + 1 // one HEAD per image, one ping
		if tc.plain {
			want = 30 // the scheme is known: no ping
		}
		if sigs {
			want++ // HEAD of the signature tag at the destination
		}
		if n := len(dst.Requests()); n != want {
			t.Errorf("no-op rerun: %d destination requests, want %d: %v", n, want, dst.Requests())
		}
	}
}
