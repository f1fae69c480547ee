package pipeline

import (
	"context"
	"sync"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/shard"
	"golang.org/x/sync/errgroup"
)

// planShards is the plan of the mirror work of related and bundles that
// every part of a split computes alike: one item per image and
// destination repository, sized from the source's manifests
// (mirror.Client.SourceBytes, eight at a time). Errors: a reference that
// cannot be mapped, and a source that cannot be sized (the part stops
// before it copies: a plan made without that size would assign the
// repositories differently from the other parts').
func planShards(ctx context.Context, mc *mirror.Client, related, bundles []mirror.Target) (*shard.Plan, error) {
	var mu sync.Mutex
	var items []shard.Item
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	seen := map[string]bool{}
	for _, t := range append(append([]mirror.Target(nil), related...), bundles...) {
		if seen[t.Ref] {
			continue
		}
		seen[t.Ref] = true
		repo, err := destinationRepository(mc, t.Ref)
		if err != nil {
			return nil, inputErr(err)
		}
		g.Go(func() error {
			n, err := mc.SourceBytes(gctx, t.Ref)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			items = append(items, shard.Item{Source: t.Ref, Repository: repo, Bytes: n})
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	p := shard.NewPlan(items)
	return &p, nil
}

// destinationRepository is the repository (host/path) ref is copied to.
func destinationRepository(mc *mirror.Client, ref string) (string, error) {
	src, err := mc.ParseReference(ref)
	if err != nil {
		return "", err
	}
	dst, err := mc.Destination(src)
	if err != nil {
		return "", err
	}
	return dst.Context().Name(), nil
}

// inPart keeps the targets of ts whose destination repository is among
// the part's items.
func inPart(mc *mirror.Client, part []shard.Item, ts []mirror.Target) []mirror.Target {
	repos := map[string]bool{}
	for _, it := range part {
		repos[it.Repository] = true
	}
	var out []mirror.Target
	for _, t := range ts {
		if repo, err := destinationRepository(mc, t.Ref); err == nil && repos[repo] {
			out = append(out, t)
		}
	}
	return out
}
