package pipeline

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/shard"
)

// MirrorOptions configures Mirror (`publish mirror`).
type MirrorOptions struct {
	Source      string   // package repo checkout (default ".")
	PackagesDir string   // relative to Source (default "packages")
	Paths       []string // mirror the versions below these (relative to Source)
	// Base mirrors the versions changed since this source revision
	// (internal/diff); with Paths, those of them that changed.
	Base    string
	NoFetch bool // never fetch from the package repo's origin
	// Images are image references mirrored besides the versions; with
	// Images only (no Paths, no Base), the package repo is not read.
	Images []string
	// Mirror is the registry client: destination, credentials, TLS.
	Mirror mirror.Options
	// Shard, when set, copies only this part of the work: every part
	// computes the same plan (shard.Plan: each image sized from its
	// manifests, by destination repository) and copies the repositories
	// shard.Plan.Assign gives it (docs/scale-out.md).
	Shard shard.Shard
	// Log receives progress lines at level Info; nil discards them.
	Log *slog.Logger
}

// MirrorResult is what Mirror did.
type MirrorResult struct {
	Versions int // package versions selected
	Related  int // distinct related images (and Images) to mirror
	Bundles  int // distinct bundles to mirror
	// Report has one entry per image at the destination, also when the
	// mirror failed part way (nil when nothing was tried).
	Report *mirror.Report
	// Plan is the plan of the whole mirror work and Part the items of it
	// this part copied; both nil without MirrorOptions.Shard.
	Plan *shard.Plan
	Part []shard.Item
}

// Mirror is the mirror stage of `publish run` alone: it selects the
// versions below Paths and, with Base, those changed since Base (every
// version when neither is given and there are no Images), reads their
// bundles as run does, and mirrors their related images and then their
// bundles, and Images, to the destination. Nothing else: no catalog, no
// commit.
//
// Errors: *PathError for a path that does not exist and *FlagError for
// registry options that cannot work (usage, exit 2); *InputError for a
// manifest or a bundle that is missing or invalid (exit 1); an error
// naming every image that could not be mirrored, with the manifest lines
// that name it, otherwise (exit 2).
func Mirror(ctx context.Context, o MirrorOptions) (*MirrorResult, error) {
	if o.Source == "" {
		o.Source = "."
	}
	if o.PackagesDir == "" {
		o.PackagesDir = "packages"
	}
	log := Options{Log: o.Log}
	opts := o.Mirror
	var selected []*model.Version
	if len(o.Paths) > 0 || o.Base != "" || len(o.Images) == 0 {
		pk, err := pickVersions(ctx, pickOptions{Source: o.Source, PackagesDir: o.PackagesDir, Paths: o.Paths, Changed: o.Base != "", Base: o.Base, NoFetch: o.NoFetch, Flag: "--base " + o.Base, Log: log.logWriter()})
		if err != nil {
			return nil, err
		}
		ms := pk.ms
		selected = pk.selected
		if opts.SrcHosts == nil {
			opts.SrcHosts = sourceHosts(ms)
		}
	}
	for _, ref := range o.Images {
		if err := registry.CheckReference(ref); err != nil {
			return nil, &FlagError{Err: fmt.Errorf("--image %q: %w", ref, err)}
		}
	}
	if len(o.Images) > 0 && opts.SrcHosts != nil {
		// Images named on the command line are sources too.
		for _, ref := range o.Images {
			if r, err := name.ParseReference(ref); err == nil {
				opts.SrcHosts = append(opts.SrcHosts, r.Context().RegistryStr())
			}
		}
	}
	mc, err := mirror.New(opts)
	if err != nil {
		return nil, &FlagError{Err: err}
	}
	if _, err := prepare(ctx, prepareIn{Versions: selected, Read: readWith(mc, log.logf, log.now), MustRead: true}); err != nil {
		return nil, fmt.Errorf("nothing mirrored:\n%w", err)
	}
	var extra []mirror.Target
	for _, ref := range o.Images {
		extra = append(extra, mirror.Target{Ref: ref})
	}
	related, bundles := mirrorTargets(selected, extra)
	res := &MirrorResult{Versions: len(selected)}
	if o.Shard.Total > 0 {
		plan, err := planShards(ctx, mc, related, bundles)
		if err != nil {
			return nil, fmt.Errorf("nothing mirrored: the plan of the shards could not be made: %w", err)
		}
		res.Plan, res.Part = plan, plan.Part(o.Shard)
		related, bundles = inPart(mc, res.Part, related), inPart(mc, res.Part, bundles)
		log.logf("mirror: %s", plan.String(o.Shard))
	}
	res.Related, res.Bundles = countUnique(related), countUnique(bundles)
	log.logf("mirror: %d package versions, %d related images, %d bundles to %s", res.Versions, res.Related, res.Bundles, o.Mirror.DstRegistry)
	res.Report, err = mc.MirrorTargets(ctx, related, bundles)
	if err == nil {
		err = mirrorRepoCharts(ctx, mc, selected, res.Report)
	}
	if err != nil {
		return res, fmt.Errorf("mirror failed:\n%w", annotateImageErrors(err, namedBy(selected)))
	}
	return res, nil
}

// ImageErrors returns the *mirror.ImageError of every image err says
// failed (the error of Mirror or Run), in order.
func ImageErrors(err error) []*mirror.ImageError {
	var out []*mirror.ImageError
	var walk func(error)
	walk = func(e error) {
		if ie, ok := e.(*mirror.ImageError); ok {
			out = append(out, ie)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// countUnique counts the distinct targets of ts.
func countUnique(ts []mirror.Target) int {
	seen := map[mirror.Target]bool{}
	for _, t := range ts {
		seen[t] = true
	}
	return len(seen)
}
