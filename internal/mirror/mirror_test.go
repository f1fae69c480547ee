package mirror

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// imageErrors returns the *ImageError leaves of err (a join of them).
func imageErrors(err error) []*ImageError {
	var out []*ImageError
	var walk func(error)
	walk = func(e error) {
		if ie, ok := e.(*ImageError); ok {
			out = append(out, ie)
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// assertSame checks that dst holds the manifest of src byte for byte, and,
// for an index, every child manifest; every image is then read whole
// (config and layers present with their digests).
func assertSame(t *testing.T, src, dst *testRegistry, srcRef, dstRef string) {
	t.Helper()
	sd, err := remote.Get(src.ref(t, srcRef), src.opts...)
	if err != nil {
		t.Fatal(err)
	}
	dd, err := remote.Get(dst.ref(t, dstRef), dst.opts...)
	if err != nil {
		t.Fatalf("destination %s: %v", dstRef, err)
	}
	if sd.Digest != dd.Digest || !bytes.Equal(sd.Manifest, dd.Manifest) || sd.MediaType != dd.MediaType {
		t.Fatalf("%s: destination digest %s (%s), source %s (%s)", dstRef, dd.Digest, dd.MediaType, sd.Digest, sd.MediaType)
	}
	if !dd.MediaType.IsIndex() {
		img, err := dd.Image()
		if err != nil {
			t.Fatal(err)
		}
		readImage(t, dstRef, img)
		return
	}
	idx, err := dd.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	repo := dst.ref(t, dstRef).Context()
	for _, child := range im.Manifests {
		cd, err := remote.Get(repo.Digest(child.Digest.String()), dst.opts...)
		if err != nil {
			t.Errorf("child %s missing at the destination: %v", child.Digest, err)
			continue
		}
		if cd.Digest != child.Digest {
			t.Errorf("child %s has digest %s at the destination", child.Digest, cd.Digest)
		}
		img, err := cd.Image()
		if err != nil {
			t.Fatal(err)
		}
		readImage(t, dstRef+" child "+child.Digest.String(), img)
	}
}

// readImage reads the config and every layer of img; go-containerregistry
// checks each blob against its digest as it is read.
func readImage(t *testing.T, what string, img v1.Image) {
	t.Helper()
	if _, err := img.RawConfigFile(); err != nil {
		t.Errorf("%s: config: %v", what, err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(layers) == 0 {
		t.Errorf("%s: no layers", what)
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

func TestMirrorCopiesAndSkips(t *testing.T) {
	src := startRegistry(t, regOptions{})
	dst := startRegistry(t, regOptions{})
	app := src.pushImage(t, "team/app:v1")
	idx := src.pushIndex(t, "team/multi:v1", 3)
	pinned := src.pushImage(t, "team/pinned:v1")
	pinnedRef := src.Host + "/team/pinned@" + digestOf(t, pinned).String()
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 3 {
		t.Fatalf("random index: %v, %v", im, err)
	}

	c, err := New(Options{DstRegistry: dst.Host + "/mirror/x"})
	if err != nil {
		t.Fatal(err)
	}
	appRef, multiRef := src.Host+"/team/app:v1", src.Host+"/team/multi:v1"
	related := []string{appRef, multiRef, appRef, ""}
	bundles := []string{pinnedRef}
	want := []Result{
		{Source: appRef, Destination: dst.Host + "/mirror/x/team/app:v1", Digest: digestOf(t, app).String()},
		{Source: multiRef, Destination: dst.Host + "/mirror/x/team/multi:v1", Digest: digestOf(t, idx).String()},
		{Source: pinnedRef, Destination: dst.Host + "/mirror/x/team/pinned@" + digestOf(t, pinned).String(), Digest: digestOf(t, pinned).String()},
	}

	rep, err := c.Mirror(context.Background(), related, bundles)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.Images, want) {
		t.Fatalf("report %+v\nwant %+v", rep.Images, want)
	}
	if rep.Copied() != 3 {
		t.Errorf("Copied = %d, want 3", rep.Copied())
	}
	assertSame(t, src, dst, "team/app:v1", "mirror/x/team/app:v1")
	assertSame(t, src, dst, "team/multi:v1", "mirror/x/team/multi:v1")
	assertSame(t, src, dst, "team/pinned@"+digestOf(t, pinned).String(), "mirror/x/team/pinned@"+digestOf(t, pinned).String())

	// Second run: everything is at the destination already; nothing is
	// written.
	dst.reset()
	rep, err = c.Mirror(context.Background(), related, bundles)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		want[i].Skipped = true
	}
	if !reflect.DeepEqual(rep.Images, want) {
		t.Fatalf("second report %+v\nwant %+v", rep.Images, want)
	}
	if rep.Copied() != 0 {
		t.Errorf("second run Copied = %d, want 0", rep.Copied())
	}
	requests, _ := dst.recorded()
	for _, r := range requests {
		if !strings.HasPrefix(r, http.MethodHead+" ") && !strings.HasPrefix(r, http.MethodGet+" ") {
			t.Errorf("second run wrote to the destination: %s", r)
		}
	}

	// The tag moves at the source: it is copied again, the rest skipped.
	app2 := src.pushImage(t, "team/app:v1")
	rep, err = c.Mirror(context.Background(), related, bundles)
	if err != nil {
		t.Fatal(err)
	}
	want[0].Digest, want[0].Skipped = digestOf(t, app2).String(), false
	if !reflect.DeepEqual(rep.Images, want) {
		t.Fatalf("third report %+v\nwant %+v", rep.Images, want)
	}
	assertSame(t, src, dst, "team/app:v1", "mirror/x/team/app:v1")

	// Nothing to do.
	rep, err = c.Mirror(context.Background(), nil, nil)
	if err != nil || len(rep.Images) != 0 {
		t.Errorf("empty Mirror = %+v, %v", rep, err)
	}
}

// TestMirrorOrder checks that no request for a bundle reaches the
// destination before every related image is there.
func TestMirrorOrder(t *testing.T) {
	src := startRegistry(t, regOptions{})
	dst := startRegistry(t, regOptions{})
	var related, bundles []string
	for _, r := range []string{"rel/a:1", "rel/b:1", "rel/c:1", "rel/d:1", "rel/e:1"} {
		src.pushImage(t, r)
		related = append(related, src.Host+"/"+r)
	}
	src.pushIndex(t, "rel/idx:1", 3)
	related = append(related, src.Host+"/rel/idx:1")
	for _, b := range []string{"bun/x:1", "bun/y:1"} {
		src.pushImage(t, b)
		bundles = append(bundles, src.Host+"/"+b)
	}
	c, err := New(Options{DstRegistry: dst.Host + "/m", Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Mirror(context.Background(), related, bundles)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied() != len(related)+len(bundles) {
		t.Errorf("Copied = %d, want %d", rep.Copied(), len(related)+len(bundles))
	}
	requests, _ := dst.recorded()
	lastRel, firstBun, relPuts := -1, -1, 0
	for i, r := range requests {
		switch {
		case strings.Contains(r, "/m/rel/"):
			lastRel = i
			if strings.HasPrefix(r, "PUT ") && strings.Contains(r, "/manifests/") {
				relPuts++
			}
		case strings.Contains(r, "/m/bun/") && firstBun < 0:
			firstBun = i
		}
	}
	if want := len(related) + 3; relPuts != want { // and the 3 children of the index
		t.Errorf("%d related manifest PUTs, want %d", relPuts, want)
	}
	if firstBun < 0 || lastRel < 0 || firstBun < lastRel {
		t.Errorf("bundle request %d before the last related request %d:\n%s", firstBun, lastRel, strings.Join(requests, "\n"))
	}
}

func TestMirrorRelatedFailure(t *testing.T) {
	src := startRegistry(t, regOptions{})
	dst := startRegistry(t, regOptions{})
	src.pushImage(t, "rel/a:1")
	src.pushImage(t, "rel/b:1")
	src.pushImage(t, "bun/z:1")
	c, err := New(Options{DstRegistry: dst.Host + "/m"})
	if err != nil {
		t.Fatal(err)
	}
	missingTag := src.Host + "/rel/a:2"
	missingRepo := src.Host + "/rel/nothing:1"
	related := []string{src.Host + "/rel/a:1", missingTag, src.Host + "/rel/b:1", missingRepo}
	rep, err := c.Mirror(context.Background(), related, []string{src.Host + "/bun/z:1"})
	if err == nil {
		t.Fatal("Mirror succeeded with missing related images")
	}
	ies := imageErrors(err)
	var refs []string
	for _, ie := range ies {
		refs = append(refs, ie.Ref)
		if !ie.Input {
			t.Errorf("%s: Input = false for a 404", ie.Ref)
		}
		if !strings.Contains(ie.Error(), ie.Ref) || !strings.Contains(ie.Error(), "not found") {
			t.Errorf("error %q does not name %s and say not found", ie.Error(), ie.Ref)
		}
	}
	if want := []string{missingTag, missingRepo}; !reflect.DeepEqual(refs, want) {
		t.Errorf("failed refs %q, want %q (sorted by message)", refs, want)
	}
	for _, ref := range []string{missingTag, missingRepo} {
		if !strings.Contains(err.Error(), ref) {
			t.Errorf("error does not name %s:\n%v", ref, err)
		}
	}
	var ie *ImageError
	if !errors.As(err, &ie) || !ie.Input {
		t.Errorf("errors.As(*ImageError) = %+v", ie)
	}

	// The related images that could be copied were, the bundle was not
	// touched at all.
	if len(rep.Images) != 2 || rep.Images[0].Source != related[0] || rep.Images[1].Source != related[2] {
		t.Errorf("report %+v, want the two related images that exist", rep.Images)
	}
	requests, _ := dst.recorded()
	for _, r := range requests {
		if strings.Contains(r, "/bun/") {
			t.Errorf("bundle request reached the destination: %s", r)
		}
	}
	if _, err := remote.Head(dst.ref(t, "m/bun/z:1")); err == nil {
		t.Error("the bundle is at the destination")
	}
}

func TestCopyErrors(t *testing.T) {
	src := startRegistry(t, regOptions{})
	dst := startRegistry(t, regOptions{})
	locked := startRegistry(t, regOptions{user: "u", pass: "p"})
	src.pushImage(t, "ok/app:1")
	locked.pushImage(t, "ok/app:1")
	down := httptest.NewServer(http.NotFoundHandler())
	downHost := strings.TrimPrefix(down.URL, "http://")
	down.Close()

	tests := []struct {
		name  string
		o     Options
		ref   string
		input bool
		msg   []string
	}{
		{"missing tag", Options{DstRegistry: dst.Host}, src.Host + "/ok/app:2", true, []string{"not found"}},
		{"missing repository", Options{DstRegistry: dst.Host}, src.Host + "/no/such:1", true, []string{"not found"}},
		{"missing digest", Options{DstRegistry: dst.Host}, src.Host + "/ok/app@" + sha, true, []string{"not found"}},
		{"malformed reference", Options{DstRegistry: dst.Host}, src.Host + "/UPPER/app:1", true, nil},
		{"no destination", Options{}, src.Host + "/ok/app:1", true, []string{"--dst-registry"}},
		{"source 401", Options{DstRegistry: dst.Host}, locked.Host + "/ok/app:1", false, []string{"401", "--src-username"}},
		{"destination 401", Options{DstRegistry: locked.Host + "/m", Dst: Credentials{Username: "u", Password: "wrong"}}, src.Host + "/ok/app:1", false, []string{"401", "--dst-username"}},
		{"source unreachable", Options{DstRegistry: dst.Host}, downHost + "/ok/app:1", false, []string{"cannot reach"}},
		{"destination unreachable", Options{DstRegistry: downHost}, src.Host + "/ok/app:1", false, []string{"cannot reach"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Copy(context.Background(), tc.ref)
			if err == nil {
				t.Fatalf("Copy = %+v, want an error", res)
			}
			var ie *ImageError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v (%T), want *ImageError", err, err)
			}
			if ie.Ref != tc.ref || ie.Input != tc.input {
				t.Errorf("ImageError{Ref: %q, Input: %v}, want {%q, %v}", ie.Ref, ie.Input, tc.ref, tc.input)
			}
			for _, m := range append([]string{tc.ref}, tc.msg...) {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not say %q", err, m)
				}
			}
		})
	}

	t.Run("canceled", func(t *testing.T) {
		c, err := New(Options{DstRegistry: dst.Host})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = c.Mirror(ctx, []string{src.Host + "/ok/app:1"}, nil)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}

// TestMirrorCredentials mirrors between two registries that each want
// their own basic-auth credentials, and checks which user names each saw.
func TestMirrorCredentials(t *testing.T) {
	srcCreds := Credentials{Username: "src-user", Password: "src-pass"}
	dstCreds := Credentials{Username: "dst-user", Password: "dst-pass"}
	tests := []struct {
		name     string
		src, dst Credentials
		wantErr  string // "" for success
	}{
		{"each side its own", srcCreds, dstCreds, ""},
		{"swapped", dstCreds, srcCreds, "--src-username"},
		{"source unset", Credentials{}, dstCreds, "--src-username"},
		{"destination unset", srcCreds, Credentials{}, "--dst-username"},
		{"destination wrong", srcCreds, Credentials{Username: "dst-user", Password: "nope"}, "--dst-username"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := startRegistry(t, regOptions{user: srcCreds.Username, pass: srcCreds.Password})
			dst := startRegistry(t, regOptions{user: dstCreds.Username, pass: dstCreds.Password})
			img := src.pushImage(t, "team/app:v1")
			idx := src.pushIndex(t, "team/multi:v1", 3)
			src.reset()
			c, err := New(Options{DstRegistry: dst.Host + "/m", Src: tc.src, Dst: tc.dst})
			if err != nil {
				t.Fatal(err)
			}
			related := []string{src.Host + "/team/app:v1"}
			bundles := []string{src.Host + "/team/multi:v1"}
			rep, err := c.Mirror(context.Background(), related, bundles)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if rep.Copied() != 2 {
					t.Errorf("Copied = %d, want 2", rep.Copied())
				}
				if rep.Images[0].Digest != digestOf(t, img).String() || rep.Images[1].Digest != digestOf(t, idx).String() {
					t.Errorf("report %+v", rep.Images)
				}
				assertSame(t, src, dst, "team/app:v1", "m/team/app:v1")
				assertSame(t, src, dst, "team/multi:v1", "m/team/multi:v1")
			} else {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "401") {
					t.Errorf("err = %v, want a 401 naming %s", err, tc.wantErr)
				}
				for _, ie := range imageErrors(err) {
					if ie.Input {
						t.Errorf("%s: a 401 is not an input error", ie.Ref)
					}
				}
			}
			// Whatever happened, each registry got only its side's user.
			for _, side := range []struct {
				reg  *testRegistry
				want string
			}{{src, tc.src.Username}, {dst, tc.dst.Username}} {
				_, users := side.reg.recorded()
				for _, u := range users {
					if u != "" && u != side.want {
						t.Errorf("%s received user %q, want only %q", side.reg.Host, u, side.want)
					}
				}
			}
		})
	}
}

// TestMirrorDockerHubDestination checks the destination credentials when
// the destination is written docker.io: go-containerregistry names that
// registry index.docker.io.
func TestMirrorDockerHubDestination(t *testing.T) {
	c, err := New(Options{DstRegistry: "docker.io", Src: Credentials{Username: "s", Password: "s"}, Dst: Credentials{Username: "d", Password: "d"}})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := name.ParseReference("quay.io/org/op:v1")
	dst, err := c.Destination(src)
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.reg.Keychain().Resolve(dst.Context())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := a.Authorization()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Username != "d" {
		t.Errorf("destination %s gets user %q, want the destination's", dst, cfg.Username)
	}
	if c.DstHost() != "docker.io" {
		t.Errorf("DstHost = %q, want docker.io as given", c.DstHost())
	}
}
