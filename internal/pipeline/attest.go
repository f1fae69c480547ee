package pipeline

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"golang.org/x/sync/errgroup"
)

// ImageAttester is an ImageSigner that also signs what publish says of
// the images it mirrored (internal/sign's ImageSigner): a verification
// summary per mirrored digest (docs/signatures.md), and with
// Options.SignImages a signature of its own.
type ImageAttester interface {
	ImageSigner
	// SignReferrer signs repo@desc as a bundle referrer only: never a
	// .sig tag, which at a mirrored image holds the vendor's signature.
	SignReferrer(ctx context.Context, repo name.Repository, desc v1.Descriptor, opts []remote.Option) (string, error)
	// Signed reports whether repo@desc has a signature by this signer.
	Signed(ctx context.Context, repo name.Repository, desc v1.Descriptor, opts []remote.Option) (bool, error)
	// Summarize attaches s to repo@desc as a signed verification summary,
	// unless an equal one by this signer is there (false then).
	Summarize(ctx context.Context, repo name.Repository, desc v1.Descriptor, s model.Summary, opts []remote.Option) (bool, error)
}

// attestMirrored signs, at the destination, what the mirror report rep
// says reached it: with o.SignImages each mirrored digest (an image, or
// an image index and each of its platform children) gets a signature by
// o.Sign unless it has one; every digest of an image a publish.yaml rule
// verified (verified, by the reference the manifest names) gets a
// verification summary (model.NewSummary) unless an equal one is there.
// Nothing happens when o.Sign cannot attest. At most 8 images at once.
// Errors name the image and --cosign-key; the caller commits nothing.
func attestMirrored(ctx context.Context, o Options, mc *mirror.Client, opts []remote.Option, rep *mirror.Report, verified map[string]model.Verification) error {
	at, ok := o.Sign.(ImageAttester)
	if !ok || rep == nil || (len(verified) == 0 && !o.SignImages) {
		return nil
	}
	now := o.now()
	var signed, summaries atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, r := range rep.Images {
		v, hasV := verified[r.Source]
		if !o.SignImages && (!hasV || v.Outcome() == "") {
			continue
		}
		g.Go(func() error {
			dst, err := mc.ParseReference(r.Destination)
			if err != nil {
				return err
			}
			repo := dst.Context()
			descs, err := mirroredDigests(gctx, repo, r.Digest, opts)
			if err != nil {
				return fmt.Errorf("signing what was mirrored to %s (--cosign-key): %w", r.Destination, err)
			}
			for _, d := range descs {
				if o.SignImages {
					if has, err := at.Signed(gctx, repo, d, opts); err != nil || !has {
						if err == nil {
							_, err = at.SignReferrer(gctx, repo, d, opts)
						}
						if err != nil {
							return fmt.Errorf("signing %s@%s (sign.images, --cosign-key): %w", repo, d.Digest, err)
						}
						signed.Add(1)
					}
				}
				if !hasV {
					continue
				}
				inputs, err := summaryInputs(gctx, repo, d.Digest, r.SignatureDigests, opts)
				if err != nil {
					return fmt.Errorf("the verification summary of %s@%s (--cosign-key): %w", repo, d.Digest, err)
				}
				s, ok := model.NewSummary(v, repo.Name()+"@"+d.Digest.String(), inputs, now)
				if !ok {
					continue
				}
				wrote, err := at.Summarize(gctx, repo, d, s, opts)
				if err != nil {
					return fmt.Errorf("the verification summary of %s@%s (--cosign-key): %w", repo, d.Digest, err)
				}
				if wrote {
					summaries.Add(1)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("%w; nothing committed", err)
	}
	if o.SignImages {
		o.logf("sign: %d mirrored digests signed (sign.images), the others were signed already", signed.Load())
	}
	if len(verified) > 0 {
		o.logf("sign: %d verification summaries attached, the others were there already", summaries.Load())
	}
	return nil
}

// mirroredDigests returns the descriptor of repo@digest and, for an image
// index, those of its platform children (an attestation manifest,
// platform unknown/unknown, is none).
func mirroredDigests(ctx context.Context, repo name.Repository, digest string, opts []remote.Option) ([]v1.Descriptor, error) {
	opts = append(append([]remote.Option(nil), opts...), remote.WithContext(ctx))
	d, err := remote.Get(repo.Digest(digest), opts...)
	if err != nil {
		return nil, err
	}
	out := []v1.Descriptor{d.Descriptor}
	if !d.MediaType.IsIndex() {
		return out, nil
	}
	idx, err := d.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, m := range im.Manifests {
		if m.Platform != nil && m.Platform.OS == "unknown" {
			continue
		}
		out = append(out, v1.Descriptor{MediaType: m.MediaType, Digest: m.Digest, Size: m.Size})
	}
	return out, nil
}

// summaryInputs lists, as REGISTRY/REPOSITORY@DIGEST, sorted, the
// signatures and attestations of repo@digest that the mirror copied from
// the source (sigs: mirror.Result.SignatureDigests), which verification
// read there: its referrers and its .sig and .att tags at the
// destination. Summaries and signatures publish wrote at the destination
// are no input: a rerun finds the same inputs.
func summaryInputs(ctx context.Context, repo name.Repository, digest v1.Hash, sigs []string, opts []remote.Option) ([]string, error) {
	if len(sigs) == 0 {
		return nil, nil
	}
	copied := map[string]bool{}
	for _, s := range sigs {
		copied[s] = true
	}
	opts = append(append([]remote.Option(nil), opts...), remote.WithContext(ctx))
	var refs []v1.Descriptor
	idx, err := remote.Referrers(repo.Digest(digest.String()), opts...)
	if err != nil && !mirror.IsNotFound(err) {
		return nil, err
	}
	if err == nil {
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		refs = im.Manifests
	}
	var out []string
	for _, m := range refs {
		if copied[m.Digest.String()] {
			out = append(out, repo.Name()+"@"+m.Digest.String())
		}
	}
	for _, suffix := range []string{".sig", ".att"} {
		d, err := remote.Head(repo.Tag(digest.Algorithm+"-"+digest.Hex+suffix), opts...)
		if err == nil && copied[d.Digest.String()] {
			out = append(out, repo.Name()+"@"+d.Digest.String())
		}
	}
	sort.Strings(out)
	return out, nil
}
