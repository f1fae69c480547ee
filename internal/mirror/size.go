package mirror

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// SourceBytes returns the size in bytes of the image ref at its source as
// its manifests declare it: the manifest, its config and its layers; for
// an index, the index and every child's (all platforms: a mirror copies
// the index whole). It costs one GET per manifest and reads no blob.
// Errors are the registry's, described with the client's flags
// (Describe), naming ref.
func (c *Client) SourceBytes(ctx context.Context, ref string) (int64, error) {
	r, err := c.ReadReference(ref)
	if err != nil {
		return 0, err
	}
	opts := append(c.SrcOptions(), remote.WithContext(ctx))
	desc, err := remote.Get(r, opts...)
	if err != nil {
		return 0, c.Describe("sizing "+ref, r.Context().RegistryStr(), err)
	}
	n := desc.Size
	if !desc.MediaType.IsIndex() {
		img, err := desc.Image()
		if err != nil {
			return 0, fmt.Errorf("sizing %s: %w", ref, err)
		}
		b, err := contentBytes(img)
		if err != nil {
			return 0, fmt.Errorf("sizing %s: %w", ref, err)
		}
		return n + b, nil
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return 0, fmt.Errorf("sizing %s: %w", ref, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return 0, fmt.Errorf("sizing %s: %w", ref, err)
	}
	for _, child := range im.Manifests {
		if child.MediaType != types.OCIManifestSchema1 && child.MediaType != types.DockerManifestSchema2 {
			n += child.Size // a nested index or an artifact: its manifest only
			continue
		}
		img, err := idx.Image(child.Digest)
		if err != nil {
			return 0, c.Describe("sizing "+ref, r.Context().RegistryStr(), err)
		}
		b, err := contentBytes(img)
		if err != nil {
			return 0, c.Describe("sizing "+ref, r.Context().RegistryStr(), err)
		}
		n += child.Size + b
	}
	return n, nil
}

// contentBytes is the size of img's config and layers as its manifest
// declares them (one GET of the manifest when it is remote, no blob).
func contentBytes(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	n := m.Config.Size
	for _, l := range m.Layers {
		n += l.Size
	}
	return n, nil
}
