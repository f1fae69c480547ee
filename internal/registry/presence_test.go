package registry_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/testenv"
)

// countingTransport counts the HEAD requests for manifests that pass
// through it.
type countingTransport struct {
	next  http.RoundTripper
	heads atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodHead {
		c.heads.Add(1)
	}
	return c.next.RoundTrip(r)
}

// TestCheckPresence: against the Debian registry with TLS and htpasswd,
// one HEAD per distinct reference tells a manifest that is there (by
// digest and by tag), one that is missing (unknown digest, unknown
// repository), a tag that has moved (mismatch), and, without
// credentials, that it could not look (unknown, with the 401) rather than
// "missing".
func TestCheckPresence(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.ParseReference(reg.Ref("team/app:v1"))
	if err := remote.Write(tag, img, reg.Options()...); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	other, _ := random.Image(512, 1)
	od, _ := other.Digest()
	byDigest, _ := name.ParseReference(reg.Ref("team/app@" + d.String()))
	missing, _ := name.ParseReference(reg.Ref("team/app@" + od.String()))
	noRepo, _ := name.ParseReference(reg.Ref("team/none@" + d.String()))

	wants := []registry.Want{
		{Ref: byDigest},
		{Ref: tag, Digest: d},
		{Ref: missing},
		{Ref: noRepo},
		{Ref: tag, Digest: od},
		{Ref: byDigest}, // asked once
	}
	ct := &countingTransport{next: reg.Transport()}
	opts := append(reg.Options(), remote.WithTransport(ct))
	got := registry.CheckPresence(context.Background(), wants, 2, opts...)
	want := []registry.State{registry.Present, registry.Present, registry.Missing, registry.Missing, registry.Mismatch, registry.Present}
	for i, f := range got {
		if f.State != want[i] {
			t.Errorf("%s (want digest %v): %v (%v), want %v", f.Ref, f.Want.Digest, f.State, f.Err, want[i])
		}
		if f.State == registry.Present && f.Digest != d {
			t.Errorf("%s: digest %v, want %v", f.Ref, f.Digest, d)
		}
	}
	// Four distinct references: byDigest, tag, missing, noRepo (the tag and
	// byDigest are asked once for both of their Wants; the ping that finds
	// the auth scheme is a GET).
	if n := ct.heads.Load(); n != 4 {
		t.Errorf("%d HEAD requests, want 4 (one per distinct reference)", n)
	}
	if c := registry.Count(got); c != (registry.PresenceCounts{Present: 3, Missing: 2, Mismatch: 1}) {
		t.Errorf("counts %+v", c)
	}

	t.Run("no credentials", func(t *testing.T) {
		anon := []remote.Option{remote.WithTransport(reg.Transport())}
		got := registry.CheckPresence(context.Background(), wants[:3], 0, anon...)
		for _, f := range got {
			if f.State != registry.Unknown || !registry.IsAuth(f.Err) {
				t.Errorf("%s: %v (%v), want unknown with the registry's 401", f.Ref, f.State, f.Err)
			}
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for _, f := range registry.CheckPresence(ctx, wants[:2], 1, opts...) {
			if f.State != registry.Unknown || f.Err == nil {
				t.Errorf("%s: %v (%v), want unknown with the context's error", f.Ref, f.State, f.Err)
			}
		}
	})
}
