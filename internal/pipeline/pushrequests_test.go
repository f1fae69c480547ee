package pipeline

import (
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/testenv"
)

// sharedLayerArchive packages the artifacts alpha and beta (and the
// fixture's tiny) whose manager and worker images share a base layer, so
// that a push uploads it once and mounts it into the three other
// repositories.
func sharedLayerArchive(t *testing.T) (*fixture, string) {
	t.Helper()
	f := newFixture(t)
	f.pushRequiring(t, "alpha", "1.0.0")
	f.pushRequiring(t, "beta", "1.0.0")
	base, err := random.Layer(4096, "application/vnd.oci.image.layer.v1.tar+gzip")
	if err != nil {
		t.Fatal(err)
	}
	for i, repo := range []string{"alpha/manager", "alpha/worker", "beta/manager", "beta/worker"} {
		own, err := random.Layer(int64(1000+i), "application/vnd.oci.image.layer.v1.tar+gzip")
		if err != nil {
			t.Fatal(err)
		}
		img, err := mutate.AppendLayers(empty.Image, base, own)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(mustRef(t, f.src+"/"+repo+":v1.0.0"), img); err != nil {
			t.Fatal(err)
		}
	}
	f.commit(t, "alpha, beta")
	out := filepath.Join(t.TempDir(), "all.tgz")
	if _, err := Package(t.Context(), PackageOptions{Source: f.source, Output: out, Mirror: mirror.Options{PlainHTTP: true}}); err != nil {
		t.Fatal(err)
	}
	return f, out
}

// TestPushRequests: a push of images into several repositories sends the
// fewest requests the distribution spec allows, counted by method at the
// destination: one ping (not one per repository); the push-access check
// (an upload started and cancelled: a POST and a DELETE); one HEAD per blob, in
// the first repository that needs it (what resumes a push), and none
// before a mount; a POST and one PUT per blob uploaded (no PATCH); one
// POST per mount, answered 201 by distribution, and, from
// go-containerregistry's registry, which does not mount (202), the
// destination's own copy read (one GET) into the upload it started (one
// PUT); one HEAD per image manifest while the archive is read, and one PUT
// each (by tag). Nothing else.
func TestPushRequests(t *testing.T) {
	f, out := sharedLayerArchive(t)
	for _, tc := range []struct {
		name   string
		target func(t *testing.T) (string, http.RoundTripper)
		mounts bool // the registry mounts
	}{
		{"distribution", func(t *testing.T) (string, http.RoundTripper) {
			reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
			return reg.URL(), reg.Transport()
		}, true},
		{"go-containerregistry", func(t *testing.T) (string, http.RoundTripper) {
			return "http://" + f.dst, http.DefaultTransport
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, rt := tc.target(t)
			proxy := testenv.StartFaultProxy(t, url, rt, testenv.FaultOptions{})
			res, err := Push(t.Context(), PushOptions{
				Archive: out, Mirror: mirror.Options{DstRegistry: proxy.Host + "/site", PlainHTTP: true},
				TempDir: t.TempDir(),
			})
			if err != nil {
				t.Fatal(err)
			}
			repos := map[string]bool{}
			for _, im := range res.Push.Images {
				repos[mustRef(t, im.Destination).Context().String()] = true
			}
			got := map[string]int{}
			for _, r := range proxy.Requests() {
				k := r.Method + " "
				switch {
				case r.Path == "/v2/":
					k += "ping"
				case strings.Contains(r.Path, "/blobs/uploads/") && strings.Contains(r.Query, "mount="):
					k += "mount"
				case strings.Contains(r.Path, "/blobs/uploads/"):
					k += "upload"
				case strings.Contains(r.Path, "/blobs/"):
					k += "blob"
				case strings.Contains(r.Path, "/manifests/"):
					k += "manifest"
				default:
					k += r.Path
				}
				got[k]++
			}
			p := res.Push
			fallback := 0 // mounts the registry did not do
			if !tc.mounts {
				fallback = p.BlobsMounted
			}
			want := map[string]int{
				"GET ping":      1,
				"HEAD blob":     p.BlobsPushed,
				"POST upload":   p.BlobsPushed + 1, // and the push-access check (mc.CheckDestination) ...
				"DELETE upload": 1,                 // ... cancels the upload it started
				"PUT upload":    p.BlobsPushed + fallback,
				"POST mount":    p.BlobsMounted,
				"GET blob":      fallback,
				"HEAD manifest": len(p.Images),
				"PUT manifest":  len(p.Images),
			}
			for k, n := range want {
				if n == 0 {
					delete(want, k)
				}
			}
			t.Logf("%d images in %d repositories; blobs %d pushed, %d mounted; requests: %s", len(p.Images), len(repos), p.BlobsPushed, p.BlobsMounted, counts(got))
			if len(repos) < 2 || p.BlobsMounted != 3 {
				t.Errorf("%d repositories, %d blobs mounted: want several and 3 (the shared layer)", len(repos), p.BlobsMounted)
			}
			if counts(got) != counts(want) {
				t.Errorf("requests %s, want %s", counts(got), counts(want))
			}
		})
	}
}

// counts prints request counts by kind, in order.
func counts(m map[string]int) string {
	var s []string
	for k, n := range m {
		s = append(s, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}
