package archive

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// startRegistry starts go-containerregistry's in-process registry and
// returns its host.
func startRegistry(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// pushFixture pushes a small set of images to host: two images sharing a
// base layer, and a two-platform index. It returns their references.
func pushFixture(t *testing.T, host string) (images []string, index string) {
	t.Helper()
	base, err := random.Layer(2048, "application/vnd.oci.image.layer.v1.tar+gzip")
	if err != nil {
		t.Fatal(err)
	}
	for i, repo := range []string{"example/operator:v1", "example/worker:v1"} {
		extra, _ := random.Layer(int64(1000+i), "application/vnd.oci.image.layer.v1.tar+gzip")
		img, err := mutate.AppendLayers(empty.Image, base, extra)
		if err != nil {
			t.Fatal(err)
		}
		ref := host + "/" + repo
		if err := remote.Write(mustRef(t, ref), img); err != nil {
			t.Fatal(err)
		}
		images = append(images, ref)
	}
	idx, err := random.Index(512, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	plats := []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}}
	var adds []mutate.IndexAddendum
	for i, d := range im.Manifests {
		img, _ := idx.Image(d.Digest)
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &plats[i]}})
	}
	multi := mutate.AppendManifests(empty.Index, adds...)
	index = host + "/example/multi:v2"
	if err := remote.WriteIndex(mustRef(t, index), multi); err != nil {
		t.Fatal(err)
	}
	return images, index
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ctx(t *testing.T) context.Context { return t.Context() }

func copyTruncated(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data[:len(data)*3/4], 0o644); err != nil {
		t.Fatal(err)
	}
}
