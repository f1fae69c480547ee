package archive

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// isReferrersTag reports whether ref is a referrers tag schema tag,
// sha256-<64 hex digits> (distribution-spec "Referrers Tag Schema").
func isReferrersTag(ref name.Reference) bool {
	t, ok := ref.(name.Tag)
	if !ok {
		return false
	}
	h, ok := strings.CutPrefix(t.TagStr(), "sha256-")
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// mergeReferrersTag puts at tag, where the destination holds another
// referrers tag schema index than the archive's d, the destination's
// index with the referrers of d it lacks appended: the site keeps the
// referrers publish wrote there (verification summaries, the site's
// signatures) and gains the archive's. It reports true when nothing was
// missing (nothing put). Errors: the registry's, an index that does not
// parse.
func (p *pusher) mergeReferrersTag(ctx context.Context, tag name.Tag, d string) (bool, error) {
	m := p.c.Manifests[d]
	if m == nil {
		return false, fmt.Errorf("manifest %s is not in the archive", d)
	}
	src, err := v1.ParseIndexManifest(bytes.NewReader(m.Raw))
	if err != nil {
		return false, fmt.Errorf("referrers tag index %s: %w", d, err)
	}
	desc, err := p.puller.Get(ctx, tag)
	if err != nil {
		return false, err
	}
	dst, err := v1.ParseIndexManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return false, fmt.Errorf("the destination's referrers tag %s: %w", tag, err)
	}
	listed := map[v1.Hash]bool{}
	for _, r := range dst.Manifests {
		listed[r.Digest] = true
	}
	merged := *dst
	for _, r := range src.Manifests {
		if !listed[r.Digest] {
			merged.Manifests = append(merged.Manifests, r)
		}
	}
	if len(merged.Manifests) == len(dst.Manifests) {
		return true, nil
	}
	raw, err := json.Marshal(merged)
	if err != nil {
		return false, err
	}
	return false, p.rp.Put(ctx, tag, rawManifest{raw, types.OCIImageIndex})
}
