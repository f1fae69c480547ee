package archive

import (
	"context"
	"regexp"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/registry"
)

// manifestHeads asks the destination, while the archive is read, for the
// manifest of every image to push (registry.CheckPresence, one HEAD
// each), so that putting the manifests once the archive checked out
// waits for the PUTs alone. It is called once, with the destinations
// known; ctx ends it when the push returns.
func (p *pusher) manifestHeads(ctx context.Context) {
	var wants []registry.Want
	for i, im := range p.c.Images {
		if p.dsts[i] != nil {
			wants = append(wants, registry.Want{Ref: p.dsts[i], Digest: im.Desc.Digest})
		}
	}
	p.heads = map[string]registry.Found{}
	p.headsDone = make(chan struct{})
	go func() {
		defer close(p.headsDone)
		for _, f := range registry.CheckPresence(ctx, wants, 0, p.o.Remote...) {
			p.heads[f.Ref.String()+"@"+f.Want.Digest.String()] = f
		}
	}()
}

// knownHead is what manifestHeads found for the image im at dst: present
// (with im's digest) or missing; ok is false when it was not asked or the
// answer is anything else (mismatch, unknown: asked again).
func (p *pusher) knownHead(ctx context.Context, im IndexEntry, dst name.Reference) (present, ok bool) {
	if p.headsDone == nil {
		return false, false
	}
	select {
	case <-p.headsDone:
	case <-ctx.Done():
		return false, false
	}
	f, found := p.heads[dst.String()+"@"+im.Desc.Digest.String()]
	switch {
	case !found:
		return false, false
	case f.State == registry.Present:
		return true, true
	case f.State == registry.Missing && !referrersTag(dst):
		return false, true
	}
	return false, false
}

// referrersTagRE is the tag of the referrers tag schema (OCI distribution
// spec v1.1, "Referrers Tag Schema": sha256-<hex> naming an index of an
// image's referrers).
var referrersTagRE = regexp.MustCompile(`^sha256-[0-9a-f]{64}$`)

// referrersTag reports whether dst is the referrers tag schema's index of
// an image. Putting a referrer to a registry without the referrers API
// writes that index (go-containerregistry does), so one missing when the
// archive was read may be there by its turn: it is asked again then.
func referrersTag(dst name.Reference) bool {
	t, ok := dst.(name.Tag)
	return ok && referrersTagRE.MatchString(t.TagStr())
}
