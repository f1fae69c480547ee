package archive

import (
	"context"

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
	case f.State == registry.Missing:
		return false, true
	}
	return false, false
}
