package olm

import (
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-publish/publish/internal/testenv"
)

// ociImage is a random image written as an OCI image manifest throughout:
// manifest, config and layers.
func ociImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.RootFS.DiffIDs = nil
	cf.History = nil
	out := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	out = mutate.ConfigMediaType(out, types.OCIConfigJSON)
	for _, l := range layers {
		if out, err = mutate.Append(out, mutate.Addendum{Layer: l, MediaType: types.OCILayer}); err != nil {
			t.Fatal(err)
		}
	}
	c2, err := out.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c2 = c2.DeepCopy()
	c2.OS, c2.Architecture = "linux", "amd64"
	if out, err = mutate.ConfigFile(out, c2); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCatalogImageMediaTypes pushes catalog images built on a Docker v2
// base, an OCI base and an OCI index of OCI images to a registry and reads
// their manifests back: the catalog layer and the config must have the
// media types of the manifest's own kind (a Docker layer in an OCI
// manifest, or the reverse, is a manifest that strict registries and
// runtimes refuse).
func TestCatalogImageMediaTypes(t *testing.T) {
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	ctx := context.Background()
	docker, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	oci := ociImage(t)
	ociIdx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	ociIdx = mutate.AppendManifests(ociIdx, mutate.IndexAddendum{Add: oci, Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}})
	files := map[string][]byte{} // an empty catalog is a valid image
	for _, tc := range []struct {
		name string
		push func(name.Reference) error
	}{
		{"docker", func(r name.Reference) error { return remote.Write(r, docker, reg.Options()...) }},
		{"oci", func(r name.Reference) error { return remote.Write(r, oci, reg.Options()...) }},
		{"oci-index", func(r name.Reference) error { return remote.WriteIndex(r, ociIdx, reg.Options()...) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := name.ParseReference(reg.Ref("base/" + tc.name + ":v1"))
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.push(base); err != nil {
				t.Fatal(err)
			}
			dst, err := name.ParseReference(reg.Ref("catalog/" + tc.name + ":edge"))
			if err != nil {
				t.Fatal(err)
			}
			d, _, err := Push(ctx, base, dst, files, nil, reg.Options()...)
			if err != nil {
				t.Fatal(err)
			}
			desc, err := remote.Get(d, reg.Options()...)
			if err != nil {
				t.Fatal(err)
			}
			var imgs []v1.Image
			if desc.MediaType.IsIndex() {
				idx, err := desc.ImageIndex()
				if err != nil {
					t.Fatal(err)
				}
				im, err := idx.IndexManifest()
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range im.Manifests {
					img, err := idx.Image(m.Digest)
					if err != nil {
						t.Fatal(err)
					}
					imgs = append(imgs, img)
				}
			} else {
				img, err := desc.Image()
				if err != nil {
					t.Fatal(err)
				}
				imgs = append(imgs, img)
			}
			for _, img := range imgs {
				m, err := img.Manifest()
				if err != nil {
					t.Fatal(err)
				}
				wantLayer, wantConfig := types.DockerLayer, types.DockerConfigJSON
				if m.MediaType == types.OCIManifestSchema1 {
					wantLayer, wantConfig = types.OCILayer, types.OCIConfigJSON
				} else if m.MediaType != types.DockerManifestSchema2 {
					t.Fatalf("manifest media type %s", m.MediaType)
				}
				if m.Config.MediaType != wantConfig {
					t.Errorf("%s manifest: config media type %s, want %s", m.MediaType, m.Config.MediaType, wantConfig)
				}
				for i, l := range m.Layers {
					if l.MediaType != wantLayer {
						t.Errorf("%s manifest: layer %d media type %s, want %s", m.MediaType, i, l.MediaType, wantLayer)
					}
				}
				if len(m.Layers) != 2 {
					t.Errorf("%d layers, want the base's and the catalog's", len(m.Layers))
				}
			}
		})
	}
}
