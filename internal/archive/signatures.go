package archive

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/registry"
	"golang.org/x/sync/errgroup"
)

// sigEntry is one KindSignature entry of index.json.
type sigEntry struct {
	ref     string // source repository with the tag or @digest
	subject string // digest it signs
	desc    v1.Descriptor
}

// sigSet is what signatures found.
type sigSet struct {
	entries  []sigEntry
	warnings []string
}

// signatureSuffixes are the tags that sign or describe a digest
// sha256-<hex>: cosign's signature and attestation tags, and the
// referrers tag schema index (distribution-spec), in that order.
var signatureSuffixes = []string{".sig", ".att", ""}

// signatures finds the signatures of every stored image (imgs, as
// Package collected them) and of their platform children in their source
// repositories, and records their manifests and blobs in c. Tags are
// listed once per repository. A repository the registry does not list
// (404) has no signatures; any other error fails the package and names
// the image and what --signatures=false does.
func (c *collected) signatures(ctx context.Context, o PackageOptions, imgs []ImageResult) (*sigSet, error) {
	type subject struct {
		repo    name.Repository
		digests []v1.Hash // the image's own digest first (unless reduced), then its children
	}
	var subjects []subject
	out := &sigSet{}
	for _, im := range imgs {
		ref, err := o.Parse(im.Ref)
		if err != nil {
			return nil, err
		}
		s := subject{repo: ref.Context()}
		if im.Reduced {
			out.warnings = append(out.warnings, fmt.Sprintf("%s: --platforms reduced the image index to a new digest, so the signatures of its source digest %s are not carried (each platform's are)", im.Ref, im.SourceDigest))
		} else {
			h, err := v1.NewHash(im.Digest)
			if err != nil {
				return nil, err
			}
			s.digests = append(s.digests, h)
		}
		s.digests = append(s.digests, c.children(im.Digest)...)
		subjects = append(subjects, s)
	}

	var mu sync.Mutex
	tags := map[string]*tagList{}
	listTags := func(ctx context.Context, repo name.Repository) (map[string]bool, error) {
		mu.Lock()
		tl, ok := tags[repo.String()]
		if !ok {
			tl = &tagList{done: make(chan struct{})}
			tags[repo.String()] = tl
		}
		mu.Unlock()
		if ok {
			select {
			case <-tl.done:
				return tl.tags, tl.err
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		defer close(tl.done)
		list, err := c.puller.List(ctx, repo)
		if err != nil && !registry.IsNotFound(err) {
			tl.err = err
			return nil, err
		}
		tl.tags = map[string]bool{}
		for _, t := range list {
			tl.tags[t] = true
		}
		return tl.tags, nil
	}
	seen := map[string]bool{}
	add := func(e sigEntry) {
		mu.Lock()
		defer mu.Unlock()
		if !seen[e.ref] {
			seen[e.ref] = true
			out.entries = append(out.entries, e)
		}
	}
	warn := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		out.warnings = append(out.warnings, s)
	}
	// store records the signature manifest ref (a tag or digest of repo)
	// and what it names.
	store := func(ctx context.Context, repo name.Repository, ref name.Reference, subj v1.Hash) error {
		raw, mt, h, err := c.get(ctx, ref)
		if err != nil {
			return err
		}
		if !mt.IsImage() && !mt.IsIndex() {
			warn(fmt.Sprintf("%s: a signature of media type %s, neither an image manifest nor an index: not carried", ref, mt))
			return nil
		}
		d, err := c.add(ctx, repo, raw, mt, ref.String(), 0)
		if err != nil {
			return err
		}
		d.Digest = h
		d.Annotations = map[string]string{AnnotationRefName: ref.String(), AnnotationSource: ref.String(), AnnotationKind: KindSignature, AnnotationSubject: subj.String()}
		add(sigEntry{ref: ref.String(), subject: subj.String(), desc: d})
		return nil
	}

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Concurrency)
	for _, s := range subjects {
		g.Go(func() error {
			fail := func(what string, err error) error {
				return fmt.Errorf("%s: %s (--signatures=false leaves the signatures out): %w", s.repo, what, err)
			}
			for _, d := range s.digests {
				idx, err := remote.Referrers(s.repo.Digest(d.String()), append(append([]remote.Option(nil), o.Remote...), remote.WithContext(gctx))...)
				if err != nil && !registry.IsNotFound(err) {
					return fail("listing the referrers of "+d.String(), err)
				}
				if idx != nil {
					im, err := idx.IndexManifest()
					if err != nil {
						return fail("reading the referrers of "+d.String(), err)
					}
					for _, r := range im.Manifests {
						if err := store(gctx, s.repo, s.repo.Digest(r.Digest.String()), d); err != nil {
							return fail("referrer "+r.Digest.String(), err)
						}
					}
				}
			}
			have, err := listTags(gctx, s.repo)
			if err != nil {
				return fail("listing its tags to find signatures", err)
			}
			for _, d := range s.digests {
				for _, suffix := range signatureSuffixes {
					tag := d.Algorithm + "-" + d.Hex + suffix
					if !have[tag] {
						continue
					}
					if err := store(gctx, s.repo, s.repo.Tag(tag), d); err != nil {
						if registry.IsNotFound(err) {
							continue // deleted since the listing
						}
						return fail("signature tag "+tag, err)
					}
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	sort.Slice(out.entries, func(i, j int) bool { return out.entries[i].ref < out.entries[j].ref })
	sort.Strings(out.warnings)
	return out, nil
}

// tagList is the tag list of one repository, read once.
type tagList struct {
	done chan struct{}
	tags map[string]bool
	err  error
}

// children returns the digests of the image manifests and indexes that
// the stored manifest d names, recursively, in the order they appear.
func (c *collected) children(d string) []v1.Hash {
	c.mu.Lock()
	raw := c.manifests[d]
	c.mu.Unlock()
	var idx struct {
		Manifests []v1.Descriptor `json:"manifests"`
	}
	if json.Unmarshal(raw, &idx) != nil {
		return nil
	}
	var out []v1.Hash
	for _, ch := range idx.Manifests {
		if ch.MediaType.IsImage() || ch.MediaType.IsIndex() {
			out = append(out, ch.Digest)
			out = append(out, c.children(ch.Digest.String())...)
		}
	}
	return out
}
