package archive

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/registry"
	"golang.org/x/sync/errgroup"
)

// BaseMissingError refuses the push of a differential archive: the
// destination lacks images its base archive promised (Missing: "SOURCE
// -> DESTINATION: missing", or "mismatch" for a tag at another digest).
// Nothing was pushed.
type BaseMissingError struct {
	Base    string // the base's digest lists (AnnotationBase)
	Missing []string
}

func (e *BaseMissingError) Error() string {
	list := e.Missing
	more := ""
	if len(list) > 20 {
		list, more = list[:20], fmt.Sprintf("; and %d more", len(e.Missing)-20)
	}
	return fmt.Sprintf("this differential archive was made against %s, and the destination lacks %d of the images it holds: %s%s: push that archive first (or package a full archive, without --base-archive)",
		e.Base, len(e.Missing), strings.Join(list, "; "), more)
}

// checkBase asks the destination, one HEAD per manifest
// (registry.CheckPresence), for every image the base of a differential
// archive promised; what is missing refuses the push (a
// *BaseMissingError in a *MapError), a registry that does not answer is a
// plain error.
func (p *pusher) checkBase(ctx context.Context) error {
	l := p.c.Digests
	if l == nil || len(l.BaseImages) == 0 {
		return nil
	}
	var wants []registry.Want
	var srcs []string
	for _, im := range l.BaseImages {
		d, err := p.o.Map(im.Ref)
		if err != nil {
			return &MapError{Err: fmt.Errorf("%s (an image of the base archive): %w", im.Ref, err)}
		}
		if im.Tag != "" {
			d = d.Context().Tag(im.Tag)
		}
		h, err := v1.NewHash(im.Digest)
		if err != nil {
			return &MapError{Err: fmt.Errorf("%s: digest list of the base: %w", im.Ref, err)}
		}
		wants, srcs = append(wants, registry.Want{Ref: d, Digest: h}), append(srcs, im.Ref)
	}
	var missing []string
	for i, f := range registry.CheckPresence(ctx, wants, 0, p.o.Remote...) {
		switch f.State {
		case registry.Present:
		case registry.Unknown:
			return fmt.Errorf("checking %s (an image of the base archive): %w", f.Ref, f.Err)
		default:
			missing = append(missing, fmt.Sprintf("%s -> %s: %s", srcs[i], f.Ref, f.State))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return &MapError{Err: &BaseMissingError{Base: p.c.Annotations[AnnotationBase], Missing: missing}}
	}
	p.res.BaseImages = len(wants)
	return nil
}

// mountBase makes every config and layer that the archive's images need
// and its base holds (not stored here) present in each destination
// repository that needs it: mounted from a repository the base put it in
// (go-containerregistry streams it from there when the registry does not
// mount). Errors name the blob.
func (p *pusher) mountBase(ctx context.Context) error {
	if len(p.c.BaseBlobs) == 0 {
		return nil
	}
	if err := p.dest(); err != nil {
		return err
	}
	type pair struct {
		d    string
		repo name.Repository
	}
	var pairs []pair
	for _, d := range sortedKeys(p.c.BaseBlobs) {
		seen := map[string]bool{}
		for _, o := range p.c.Owners[d] {
			if p.dsts[o] == nil || seen[p.dsts[o].Context().String()] {
				continue
			}
			seen[p.dsts[o].Context().String()] = true
			pairs = append(pairs, pair{d, p.dsts[o].Context()})
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	var mu sync.Mutex
	for _, pr := range pairs {
		g.Go(func() error {
			if ok, err := p.hasBlob(gctx, pr.repo, pr.d); err != nil || ok {
				return err
			}
			for _, src := range p.c.BaseBlobs[pr.d] {
				from, err := p.o.Map(src + "@" + pr.d)
				if err != nil {
					continue
				}
				fromRepo := from.Context()
				if ok, err := p.hasBlob(gctx, fromRepo, pr.d); err != nil || !ok {
					continue
				}
				l, err := p.puller.Layer(gctx, fromRepo.Digest(pr.d))
				if err != nil {
					return err
				}
				if err := p.rp.Upload(gctx, pr.repo, &remote.MountableLayer{Layer: l, Reference: fromRepo.Digest(pr.d)}); err != nil {
					return fmt.Errorf("mounting blob %s from %s into %s: %w", pr.d, fromRepo, pr.repo, err)
				}
				mu.Lock()
				p.res.BlobsMounted++
				mu.Unlock()
				return nil
			}
			return &MapError{Err: fmt.Errorf("blob %s, which the base archive holds, is in none of its repositories at the destination (%s): push the base archive first", pr.d, strings.Join(p.c.BaseBlobs[pr.d], ", "))}
		})
	}
	return g.Wait()
}

// hasBlob asks the destination whether repo has blob d (one HEAD).
func (p *pusher) hasBlob(ctx context.Context, repo name.Repository, d string) (bool, error) {
	l, err := p.puller.Layer(ctx, repo.Digest(d))
	if err != nil {
		return false, err
	}
	ok, err := partial.Exists(l)
	if err != nil {
		return false, fmt.Errorf("checking blob %s in %s: %w", d, repo, err)
	}
	return ok, nil
}
