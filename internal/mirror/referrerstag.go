package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/operator-publish/publish/internal/registry"
)

// copyReferrersTag copies the referrers tag schema index digest of
// srcRepo (the tag sha256-<hex>, the fallback of registries without the
// referrers API) to put at dstRepo: each referrer it lists by digest
// (recorded as seen, imageState.sawSignature, as the index is), then the
// index. When put holds another index, the destination lists referrers
// of its own (a verification summary, the site's signature, written there
// by publish): the index at put then lists both, the destination's kept,
// instead of being replaced by the source's.
func (e *engine) copyReferrersTag(ctx context.Context, st *imageState, srcRepo, dstRepo name.Repository, digest v1.Hash, put name.Reference) error {
	raw, _, err := e.getManifest(ctx, st, srcRepo, digest)
	if err != nil {
		return err
	}
	src, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return &PermanentError{Err: fmt.Errorf("referrers tag index %s: %w", digest, err)}
	}
	// Each referrer it lists by digest first, recorded as seen.
	for _, m := range src.Manifests {
		if err := e.copyTo(ctx, st, srcRepo, dstRepo, m.Digest, dstRepo.Digest(m.Digest.String())); err != nil {
			return fmt.Errorf("referrer %s: %w", m.Digest, err)
		}
	}
	dd, err := e.head(ctx, st, put, registry.Destination)
	if err != nil {
		return err
	}
	if dd == nil {
		return e.copyTo(ctx, st, srcRepo, dstRepo, digest, put)
	}
	if dd.Digest == digest {
		st.sawSignature(digest)
		return nil
	}
	// Writing a referrer adds it to the destination's index already
	// (go-containerregistry's remote.Put); one the destination had before
	// may be missing from it.
	var dst *v1.IndexManifest
	err = e.op(ctx, st, func(ctx context.Context) error {
		o, err := e.c.remoteOpts(ctx, dstRepo.Registry, registry.Destination)
		if err != nil {
			return err
		}
		d, err := remote.Get(put, o...)
		if err != nil {
			return err
		}
		dst, err = v1.ParseIndexManifest(bytes.NewReader(d.Manifest))
		return err
	})
	if err != nil {
		return registry.OnSide(registry.Destination, err)
	}
	listed := map[v1.Hash]bool{}
	for _, m := range dst.Manifests {
		listed[m.Digest] = true
	}
	merged := *dst
	for _, m := range src.Manifests {
		if !listed[m.Digest] {
			merged.Manifests = append(merged.Manifests, m)
		}
	}
	if len(merged.Manifests) > len(dst.Manifests) {
		out, err := json.Marshal(merged)
		if err != nil {
			return err
		}
		err = e.op(ctx, st, func(ctx context.Context) error {
			o, err := e.c.remoteOpts(ctx, dstRepo.Registry, registry.Destination)
			if err != nil {
				return err
			}
			return remote.Put(put, rawManifest{raw: out, mt: types.OCIImageIndex}, o...)
		})
		if err != nil {
			return fmt.Errorf("writing the referrers tag %s: %w", put, describePut(err))
		}
		st.signatures.Add(1)
	}
	st.sawSignature(digest)
	return nil
}
