package pipeline

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// bundleArtifactType is the artifactType of a Sigstore bundle referrer
// (internal/sign.BundleArtifactType; repeated here so that the pipeline
// does not link sigstore-go).
const bundleArtifactType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// signCatalog signs the OCI catalog d (the manifest at repo) with o.Sign:
// after a push, or, when the tag already pointed at it (pushed false),
// only if the digest has no Sigstore bundle referrer yet (a catalog
// published before signing was turned on). opts reach the destination.
// Errors name the catalog and --cosign-key.
func signCatalog(ctx context.Context, o Options, repo name.Repository, desc v1.Descriptor, pushed bool, opts []remote.Option) error {
	if o.Sign == nil {
		return nil
	}
	ref := repo.Digest(desc.Digest.String())
	if !pushed {
		if signed, err := hasBundle(ctx, ref, opts); err == nil && signed {
			o.logf("oci: %s is signed already", ref)
			return nil
		}
	}
	what, err := o.Sign.Sign(ctx, repo, desc, opts)
	if err != nil {
		return fmt.Errorf("signing the OCI catalog %s (--cosign-key): %w", ref, err)
	}
	o.logf("oci: signed %s: %s", ref, what)
	return nil
}

// hasBundle reports whether ref has a Sigstore bundle referrer (by the
// referrers API, or the referrers tag schema).
func hasBundle(ctx context.Context, ref name.Digest, opts []remote.Option) (bool, error) {
	idx, err := remote.Referrers(ref, append(append([]remote.Option(nil), opts...), remote.WithContext(ctx), remote.WithFilter("artifactType", bundleArtifactType))...)
	if err != nil {
		return false, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return false, err
	}
	return len(im.Manifests) > 0, nil
}

// imageDescriptor is the descriptor of img (digest, media type, size).
func imageDescriptor(img v1.Image) (v1.Descriptor, error) {
	d, err := img.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return v1.Descriptor{}, err
	}
	size, err := img.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mt, Digest: d, Size: size}, nil
}
