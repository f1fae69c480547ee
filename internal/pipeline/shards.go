package pipeline

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/shard"
	"golang.org/x/sync/errgroup"
)

// ShardRun is what a part of a split run did besides its mirror report:
// the part, the plan every part computed, and the plan's items this part
// copied (docs/scale-out.md).
type ShardRun struct {
	Part  shard.Shard
	Plan  *shard.Plan
	Items []shard.Item
}

// planShards is the plan of the mirror work of related and bundles that
// every part of a split computes alike (shardItems).
func planShards(ctx context.Context, mc *mirror.Client, related, bundles []mirror.Target) (*shard.Plan, error) {
	items, err := shardItems(ctx, mc, related, bundles)
	if err != nil {
		return nil, err
	}
	p := shard.NewPlan(items)
	return &p, nil
}

// shardItems are the items of a split's plan for related and bundles: one
// per image and destination repository, sized from the source's manifests
// (mirror.Client.SourceBytes, eight at a time). Errors: a reference that
// cannot be mapped, and a source that cannot be sized (the part stops
// before it copies: a plan made without that size would assign the
// repositories differently from the other parts').
func shardItems(ctx context.Context, mc *mirror.Client, related, bundles []mirror.Target) ([]shard.Item, error) {
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
	return items, g.Wait()
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
	return keepRepositories(mc, repos, ts)
}

func keepRepositories(mc *mirror.Client, repos map[string]bool, ts []mirror.Target) []mirror.Target {
	var out []mirror.Target
	for _, t := range ts {
		if repo, err := destinationRepository(mc, t.Ref); err == nil && repos[repo] {
			out = append(out, t)
		}
	}
	return out
}

// inPart keeps the targets of ts this part of a split run copies.
func (sh *shared) inPart(mc *mirror.Client, ts []mirror.Target) []mirror.Target {
	return keepRepositories(mc, sh.part, ts)
}

// planSplitRun plans the mirror work of every cluster of a part of a
// split run, once every cluster's target prepared (targetCluster): the
// images of all clusters in one plan, and the repositories of o.Shard's
// part in sh.part for the mirror. It returns the part's account for the
// result. Errors: a target that cannot prepare, an image that cannot be
// sized or mapped (nothing is copied).
func planSplitRun(ctx context.Context, o Options, crs []*clusterRun, sh *shared) (*ShardRun, error) {
	var items []shard.Item
	for _, cr := range crs {
		if err := targetCluster(ctx, cr, sh); err != nil {
			return nil, err
		}
		related, bundles := mirrorTargets(cr.vs, cr.extra)
		its, err := shardItems(ctx, cr.r.mc, related, bundles)
		if err != nil {
			return nil, fmt.Errorf("nothing mirrored: the plan of the shards could not be made: %w", err)
		}
		items = append(items, its...)
	}
	plan := shard.NewPlan(items)
	part := plan.Part(o.Shard)
	sh.part = map[string]bool{}
	for _, it := range part {
		sh.part[it.Repository] = true
	}
	o.logf("mirror: %s", plan.String(o.Shard))
	return &ShardRun{Part: o.Shard, Plan: &plan, Items: part}, nil
}

// ShardsError is why the results of a split run cannot be merged: each
// problem on its own line, naming the result file, the part or the image.
type ShardsError struct {
	Problems []string
	// Incomplete: the only problems are parts without a result (or parts
	// whose items are not the whole plan): the merge can still name the
	// images no result has (Options.ShardProblems), and commits nothing.
	Incomplete bool
}

func (e *ShardsError) Error() string {
	return "the shards cannot be merged, nothing committed:\n  " + strings.Join(e.Problems, "\n  ")
}

// CheckShardResults checks the results of the parts of a split run before
// a merge (publish merge-shards): every result has a part (report.Shard),
// all share one plan digest, method and N, each part 1..N is there exactly
// once, the parts' items together are the plan (each item exactly once:
// their digest is the plan's), and no image failed. names are the result
// files, for messages. It returns every image a result says is at the
// destination, by source reference. Errors: *ShardsError listing every
// problem found.
func CheckShardResults(rs []*report.Report, names []string) (map[string][]mirror.Result, error) {
	var probs, missingProbs []string
	var first *report.Shard
	byPart := map[string]string{}
	var items []shard.Item
	total := 0
	images := map[string][]mirror.Result{}
	for i, r := range rs {
		s := r.Shard
		if s == nil {
			probs = append(probs, fmt.Sprintf("%s: not the result of a part (no shard block): write it with --shard-result", names[i]))
			continue
		}
		part, err := shard.Parse(s.Part)
		switch {
		case err != nil:
			probs = append(probs, fmt.Sprintf("%s: part %s", names[i], err))
			continue
		case first == nil:
			first, total = s, part.Total
		case s.Plan != first.Plan || s.Method != first.Method:
			probs = append(probs, fmt.Sprintf("%s: plan %s (%s), but %s has plan %s (%s): the parts planned different work (another commit, another catalog tip, or another version of publish): run every part again", names[i], s.Plan, s.Method, names[0], first.Plan, first.Method))
			continue
		case part.Total != total:
			probs = append(probs, fmt.Sprintf("%s: part %s of %d parts, the others of %d", names[i], s.Part, part.Total, total))
			continue
		}
		if other, dup := byPart[s.Part]; dup {
			probs = append(probs, fmt.Sprintf("%s: part %s is also %s", names[i], s.Part, other))
			continue
		}
		byPart[s.Part] = names[i]
		items = append(items, s.Items...)
		for _, im := range r.Images {
			switch im.State {
			case report.Copied, report.Present:
				images[im.Source] = append(images[im.Source], mirror.Result{Source: im.Source, Destination: im.Destination, Digest: im.Digest, Skipped: true, SignatureDigests: im.Referrers})
			default:
				probs = append(probs, fmt.Sprintf("%s (part %s): %s %s: %s", names[i], s.Part, im.Source, im.State, im.Error))
			}
		}
	}
	if first != nil {
		var missing []string
		for i := 1; i <= total; i++ {
			if p := (shard.Shard{Index: i, Total: total}).String(); byPart[p] == "" {
				missing = append(missing, p)
			}
		}
		if len(missing) > 0 {
			missingProbs = append(missingProbs, fmt.Sprintf("no result of part %s: run it (again) and give its --shard-result", strings.Join(missing, ", ")))
		} else if got := shard.NewPlan(items); got.Digest != first.Plan || len(got.Items) != len(items) {
			probs = append(probs, fmt.Sprintf("the parts' items are not the plan %s (an item missing or twice): a result was changed or made by another assignment", first.Plan))
		}
	}
	if len(probs) > 0 {
		return nil, &ShardsError{Problems: append(probs, missingProbs...)}
	}
	if len(missingProbs) > 0 {
		return images, &ShardsError{Problems: missingProbs, Incomplete: true}
	}
	return images, nil
}

// mergedMirror is the mirror of a merge: nothing is copied; each image of
// related and bundles must be in a part's result and at the destination
// with the result's digest (one HEAD each, registry.CheckPresence). It
// returns the report the records are made from. Errors: *ShardsError
// naming every image no result has or the destination lacks.
func (sh *shared) mergedMirror(ctx context.Context, mc *mirror.Client, related, bundles []mirror.Target) (*mirror.Report, error) {
	rep := &mirror.Report{}
	var probs []string
	var wants []registry.Want
	for _, t := range append(append([]mirror.Target(nil), related...), bundles...) {
		r, ok := shardResult(sh.shards[t.Ref], t)
		if !ok {
			probs = append(probs, fmt.Sprintf("%s: in no part's result (the plan the parts made did not have it: run every part again)", t.Ref))
			continue
		}
		ref, err := mc.ParseReference(r.Destination)
		d, herr := v1.NewHash(r.Digest)
		if err != nil || herr != nil {
			probs = append(probs, fmt.Sprintf("%s: the result's destination %q or digest %q does not parse", t.Ref, r.Destination, r.Digest))
			continue
		}
		if want, err := destinationRepository(mc, t.Ref); err != nil || want != ref.Context().Name() {
			probs = append(probs, fmt.Sprintf("%s: a part copied it to %s, but this merge publishes to %s: give the merge the parts' --dst-registry", t.Ref, ref.Context().Name(), want))
			continue
		}
		wants = append(wants, registry.Want{Ref: ref, Digest: d})
		rep.Images = append(rep.Images, r)
	}
	for i, f := range registry.CheckPresence(ctx, wants, 0, mc.DstOptions()...) {
		if f.State != registry.Present {
			msg := f.State.String()
			if f.Err != nil {
				msg += ": " + f.Err.Error()
			}
			probs = append(probs, fmt.Sprintf("%s: %s@%s is %s at the destination", rep.Images[i].Source, rep.Images[i].Destination, rep.Images[i].Digest, msg))
		}
	}
	if len(probs) > 0 || len(sh.shardProblems) > 0 {
		sort.Strings(probs)
		return rep, &ShardsError{Problems: append(append([]string{}, sh.shardProblems...), probs...)}
	}
	return rep, nil
}

// shardResult picks the result of target t among rs: the one whose
// destination carries t's tag when t has one.
func shardResult(rs []mirror.Result, t mirror.Target) (mirror.Result, bool) {
	for _, r := range rs {
		if t.Tag == "" || strings.HasSuffix(r.Destination, ":"+t.Tag) {
			return r, true
		}
	}
	return mirror.Result{}, false
}
