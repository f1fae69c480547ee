package registry

import (
	"context"
	"fmt"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Platform returns "os/arch[/variant]" for p, and false when p names no
// runnable platform: nil, an empty os or architecture, or "unknown" (the
// platform buildx gives attestation manifests in an image index).
func Platform(p *v1.Platform) (string, bool) {
	if p == nil || p.OS == "" || p.OS == "unknown" || p.Architecture == "" || p.Architecture == "unknown" {
		return "", false
	}
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s, true
}

// IndexPlatforms returns the platforms (Platform) of the entries of an
// image index manifest, sorted and without repeats; attestations and
// entries without a platform are left out.
func IndexPlatforms(im *v1.IndexManifest) []string {
	set := map[string]bool{}
	for _, m := range im.Manifests {
		if s, ok := Platform(m.Platform); ok {
			set[s] = true
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Runnable reports whether the index entry d is an image that runs
// somewhere: an image manifest whose platform is not "unknown" (an entry
// without a platform counts as runnable).
func Runnable(d v1.Descriptor) bool {
	if !d.MediaType.IsImage() {
		return false
	}
	p := d.Platform
	return p == nil || (p.OS != "unknown" && p.Architecture != "unknown")
}

// FirstRunnable returns the first Runnable entry of an image index
// manifest, and false when it has none.
func FirstRunnable(im *v1.IndexManifest) (v1.Descriptor, bool) {
	for _, d := range im.Manifests {
		if Runnable(d) {
			return d, true
		}
	}
	return v1.Descriptor{}, false
}

// Platforms returns the platforms of what desc names: an image index's
// (IndexPlatforms), or an image's own, from its config file; nil when it
// names none.
func Platforms(desc *remote.Descriptor) ([]string, error) {
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		return IndexPlatforms(im), nil
	}
	img, err := desc.Image()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	if s, ok := Platform(cf.Platform()); ok {
		return []string{s}, nil
	}
	return nil, nil
}

// ImagePlatforms reads the manifest of ref (and, for an image, its config)
// and returns its platforms (Platforms). Errors are *Error.
func (c *Client) ImagePlatforms(ctx context.Context, ref string) ([]string, error) {
	r, err := c.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	desc, err := remote.Get(r, c.Options(remote.WithContext(ctx))...)
	if err != nil {
		return nil, c.Describe("reading "+ref, r.Context().RegistryStr(), err)
	}
	p, err := Platforms(desc)
	if err != nil {
		return nil, c.Describe(fmt.Sprintf("reading the platforms of %s", ref), r.Context().RegistryStr(), err)
	}
	return p, nil
}
