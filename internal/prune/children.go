package prune

import (
	"context"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// children fills, for each present entry that is an image index, the
// digests of its child manifests that no listed index of the same
// repository holds (one GET of each such index, listed ones included).
// An index that cannot be read keeps no children (its children stay).
func children(ctx context.Context, o Options, es []Entry, listed map[ref]bool) {
	shared := map[string]map[string]bool{} // repository -> digests of listed indexes' children
	repos := map[string]bool{}
	for _, e := range es {
		if isIndex(e.MediaType) {
			repos[e.Repository] = true
		}
	}
	for r := range listed {
		if !repos[r.repo] {
			continue
		}
		kids, ok := indexChildren(ctx, o, r.repo, r.digest)
		if !ok {
			continue
		}
		if shared[r.repo] == nil {
			shared[r.repo] = map[string]bool{}
		}
		for _, k := range kids {
			shared[r.repo][k] = true
		}
	}
	for i := range es {
		e := &es[i]
		if e.At != "present" || !isIndex(e.MediaType) {
			continue
		}
		kids, _ := indexChildren(ctx, o, e.Repository, e.Digest)
		for _, k := range kids {
			if !shared[e.Repository][k] && !listed[ref{e.Repository, k}] {
				e.Children = append(e.Children, k)
			}
		}
		sort.Strings(e.Children)
	}
}

// indexChildren returns the child digests of the manifest repo@digest
// when it is an image index (ok false when it cannot be read or is not
// one).
func indexChildren(ctx context.Context, o Options, repo, digest string) ([]string, bool) {
	r, err := o.Parse(repo + "@" + digest)
	if err != nil {
		return nil, false
	}
	desc, err := remote.Get(r, append(append([]remote.Option{}, o.Remote...), remote.WithContext(ctx))...)
	if err != nil || !desc.MediaType.IsIndex() {
		return nil, false
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, false
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, false
	}
	var out []string
	for _, m := range im.Manifests {
		out = append(out, m.Digest.String())
	}
	return out, true
}

func isIndex(mt string) bool {
	return mt == "application/vnd.oci.image.index.v1+json" || mt == "application/vnd.docker.distribution.manifest.list.v2+json"
}

// referrers fills, for each present entry, the signature, attestation and
// referrer manifests the destination has for it that the plan does not
// list as entries of their own (states written before they were
// recorded): the cosign tags sha256-<hex>.sig, .att and .sbom, and the
// OCI referrers (the API, else the referrers tag schema). One that a
// listed version's image also carries is left.
func referrers(ctx context.Context, o Options, es []Entry, listed map[ref]bool) {
	planned := map[ref]bool{}
	for _, e := range es {
		planned[ref{e.Repository, e.Digest}] = true
	}
	opts := append(append([]remote.Option{}, o.Remote...), remote.WithContext(ctx))
	for i := range es {
		e := &es[i]
		if e.At != "present" {
			continue
		}
		r, err := o.Parse(e.Repository + "@" + e.Digest)
		if err != nil {
			continue
		}
		d, ok := r.(name.Digest)
		if !ok {
			continue
		}
		found := map[string]bool{}
		if idx, err := remote.Referrers(d, opts...); err == nil {
			if im, err := idx.IndexManifest(); err == nil {
				for _, m := range im.Manifests {
					found[m.Digest.String()] = true
				}
			}
		}
		h, err := v1.NewHash(e.Digest)
		if err != nil {
			continue
		}
		base := h.Algorithm + "-" + h.Hex
		for _, suffix := range []string{".sig", ".att", ".sbom"} {
			if desc, err := remote.Head(d.Context().Tag(base+suffix), opts...); err == nil {
				found[desc.Digest.String()] = true
			}
		}
		for k := range found {
			rk := ref{e.Repository, k}
			if !planned[rk] && !listed[rk] && !strings.EqualFold(k, e.Digest) {
				e.Referrers = append(e.Referrers, k)
			}
		}
		sort.Strings(e.Referrers)
	}
}
