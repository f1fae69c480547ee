package archive

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
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
	out := &sigSet{}
	subjects, err := c.sigSubjects(o, imgs, out)
	if err != nil {
		return nil, err
	}
	sf := &sigFinder{c: c, out: out, tags: map[string]*tagList{}, seen: map[string]bool{}}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Concurrency)
	for _, s := range subjects {
		g.Go(func() error {
			return sf.find(gctx, o, s)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	sort.Slice(out.entries, func(i, j int) bool { return out.entries[i].ref < out.entries[j].ref })
	sort.Strings(out.warnings)
	return out, nil
}

// sigSubject is one stored image whose signatures are looked for: its
// source repository and the digests signatures may name.
type sigSubject struct {
	repo    name.Repository // where it is read (PackageOptions.Read)
	named   name.Repository // how the archive names it (PackageOptions.Parse)
	digests []v1.Hash       // the image's own digest first (unless reduced), then its children
}

// sigSubjects returns the subject of each image of imgs, in order: its
// source repository (o.Parse of its ref), its digest unless --platforms
// reduced it (then a warning is appended to out), then the digests of its
// platform children stored in c. The error is that of o.Parse or of a
// digest that does not parse.
func (c *collected) sigSubjects(o PackageOptions, imgs []ImageResult, out *sigSet) ([]sigSubject, error) {
	var subjects []sigSubject
	for _, im := range imgs {
		ref, err := o.Parse(im.Ref)
		if err != nil {
			return nil, err
		}
		read, err := o.Read(im.Ref)
		if err != nil {
			return nil, err
		}
		s := sigSubject{repo: read.Context(), named: ref.Context()}
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
	return subjects, nil
}

// sigFinder is the state signatures shares between the goroutines that
// look for the signatures of the subjects: the tag lists, read once per
// repository, and the entries and warnings found, all under mu.
type sigFinder struct {
	c    *collected
	mu   sync.Mutex
	tags map[string]*tagList
	seen map[string]bool // entry refs in out
	out  *sigSet
}

// listTags returns the tags of repo as a set, listing them once per
// repository; concurrent callers wait for the first. A repository the
// registry does not list (404) has no tags. The error is that of the
// listing, or ctx's while waiting.
func (sf *sigFinder) listTags(ctx context.Context, repo name.Repository) (map[string]bool, error) {
	sf.mu.Lock()
	tl, ok := sf.tags[repo.String()]
	if !ok {
		tl = &tagList{done: make(chan struct{})}
		sf.tags[repo.String()] = tl
	}
	sf.mu.Unlock()
	if ok {
		select {
		case <-tl.done:
			return tl.tags, tl.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer close(tl.done)
	list, err := sf.c.puller.List(ctx, repo)
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

// add appends e to the entries unless an entry of the same ref is there.
func (sf *sigFinder) add(e sigEntry) {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if !sf.seen[e.ref] {
		sf.seen[e.ref] = true
		sf.out.entries = append(sf.out.entries, e)
	}
}

// warn appends the warning s.
func (sf *sigFinder) warn(s string) {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	sf.out.warnings = append(sf.out.warnings, s)
}

// store records the signature manifest ref (a tag or digest of repo,
// where it is read) and what it names: its manifest and blobs in the
// collection, and an entry named named (the same tag or digest of the
// image's own repository) signing subj. A manifest that is neither an image nor an index is
// a warning, not an error. The error is that of reading or storing it.
func (sf *sigFinder) store(ctx context.Context, repo name.Repository, ref name.Reference, named string, subj v1.Hash) error {
	raw, mt, h, err := sf.c.get(ctx, ref)
	if err != nil {
		return err
	}
	if !mt.IsImage() && !mt.IsIndex() {
		sf.warn(fmt.Sprintf("%s: a signature of media type %s, neither an image manifest nor an index: not carried", ref, mt))
		return nil
	}
	d, err := sf.c.add(ctx, repo, raw, mt, named, 0)
	if err != nil {
		return err
	}
	d.Digest = h
	d.Annotations = map[string]string{AnnotationRefName: named, AnnotationSource: named, AnnotationKind: KindSignature, AnnotationSubject: subj.String()}
	sf.add(sigEntry{ref: named, subject: subj.String(), desc: d})
	return nil
}

// find stores the signatures of subject s: the referrers of each of its
// digests (OCI referrers API or tag schema, through o.Remote), then its
// signature tags (signatureSuffixes) that the repository lists. A
// signature tag deleted since the listing is skipped. The error names the
// repository, what failed and what --signatures=false does.
func (sf *sigFinder) find(ctx context.Context, o PackageOptions, s sigSubject) error {
	fail := func(what string, err error) error {
		return fmt.Errorf("%s: %s (--signatures=false leaves the signatures out): %w", s.repo, what, err)
	}
	for _, d := range s.digests {
		idx, err := remote.Referrers(s.repo.Digest(d.String()), append(append([]remote.Option(nil), o.Remote...), remote.WithContext(ctx))...)
		if err != nil && !registry.IsNotFound(err) {
			return fail("listing the referrers of "+d.String(), err)
		}
		if idx != nil {
			im, err := idx.IndexManifest()
			if err != nil {
				return fail("reading the referrers of "+d.String(), err)
			}
			for _, r := range im.Manifests {
				if err := sf.store(ctx, s.repo, s.repo.Digest(r.Digest.String()), s.named.Digest(r.Digest.String()).String(), d); err != nil {
					return fail("referrer "+r.Digest.String(), err)
				}
			}
		}
	}
	have, err := sf.listTags(ctx, s.repo)
	if err != nil {
		return fail("listing its tags to find signatures", err)
	}
	for _, d := range s.digests {
		for _, suffix := range signatureSuffixes {
			tag := d.Algorithm + "-" + d.Hex + suffix
			if !have[tag] {
				continue
			}
			if err := sf.store(ctx, s.repo, s.repo.Tag(tag), s.named.Tag(tag).String(), d); err != nil {
				if registry.IsNotFound(err) {
					continue // deleted since the listing
				}
				return fail("signature tag "+tag, err)
			}
		}
	}
	return nil
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
