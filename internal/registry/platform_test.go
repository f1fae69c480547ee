package registry

import (
	"io"
	"log"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestIndexPlatforms(t *testing.T) {
	im := &v1.IndexManifest{Manifests: []v1.Descriptor{
		{MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}},
		{MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}},
		{MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"}}, // buildx attestation
		{MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}},     // twice
		{MediaType: types.OCIManifestSchema1},                                      // no platform
		{MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "linux"}}, // no architecture
	}}
	if got, want := IndexPlatforms(im), []string{"linux/amd64", "linux/arm64/v8"}; !reflect.DeepEqual(got, want) {
		t.Errorf("IndexPlatforms = %v, want %v", got, want)
	}
	first, ok := FirstRunnable(&v1.IndexManifest{Manifests: []v1.Descriptor{
		{MediaType: types.OCIImageIndex, Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}},
		{MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"}},
		{MediaType: types.DockerManifestSchema2, Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}},
	}})
	if !ok || first.Platform.Architecture != "s390x" {
		t.Errorf("FirstRunnable = %+v, %v; want the s390x image", first, ok)
	}
	if _, ok := FirstRunnable(&v1.IndexManifest{}); ok {
		t.Error("FirstRunnable of an empty index")
	}
}

// TestImagePlatforms reads the platforms of an index and of an image from
// a registry.
func TestImagePlatforms(t *testing.T) {
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	var adds []mutate.IndexAddendum
	for _, p := range []v1.Platform{{OS: "linux", Architecture: "arm64", Variant: "v8"}, {OS: "linux", Architecture: "amd64"}, {OS: "unknown", Architecture: "unknown"}} {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx := mutate.AppendManifests(empty.Index, adds...)
	if err := remote.WriteIndex(mustRef(t, host+"/a/multi:v1"), idx); err != nil {
		t.Fatal(err)
	}
	img, _ := random.Image(64, 1)
	img, err := mutate.ConfigFile(img, &v1.ConfigFile{OS: "linux", Architecture: "ppc64le"})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, host+"/a/single:v1"), img); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{PlainHTTPHosts: []string{host}})
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string][]string{
		"/a/multi:v1":  {"linux/amd64", "linux/arm64/v8"},
		"/a/single:v1": {"linux/ppc64le"},
	} {
		got, err := c.ImagePlatforms(t.Context(), host+ref)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, %v; want %v", ref, got, err, want)
		}
	}
	_, err = c.ImagePlatforms(t.Context(), host+"/a/none:v1")
	if !IsNotFound(err) || Classify(err) != KindNotFound || !strings.Contains(err.Error(), "not found at "+host) {
		t.Errorf("missing image: %v", err)
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
