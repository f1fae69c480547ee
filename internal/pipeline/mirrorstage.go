package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
)

// mirrorVersions mirrors extra and the related images of the changed
// versions of vs, then their bundles (mirrorTargets), after checking push
// access at the destination. A failed image is annotated with the lines of
// every manifest of vs that names it; the error is an *InputError when only
// the package repo can fix it (mirrorErr).
func mirrorVersions(ctx context.Context, mc *mirror.Client, vs []*model.Version, extra []mirror.Target) (*mirror.Report, error) {
	related, bundleRefs := mirrorTargets(vs, extra)
	return mirrorTargetList(ctx, mc, vs, related, bundleRefs)
}

// mirrorTargetList mirrors related, then bundleRefs (mirrorTargets of
// vs), as mirrorVersions does.
func mirrorTargetList(ctx context.Context, mc *mirror.Client, vs []*model.Version, related, bundleRefs []mirror.Target) (*mirror.Report, error) {
	if len(bundleRefs) > 0 {
		if err := mc.CheckDestination(bundleRefs[0].Ref); err != nil {
			return nil, fmt.Errorf("nothing mirrored, nothing committed: %w", err)
		}
	}
	rep, err := mc.MirrorTargets(ctx, related, bundleRefs)
	if err == nil {
		err = mirrorRepoCharts(ctx, mc, vs, rep)
	}
	if err != nil {
		return rep, mirrorErr(annotateImageErrors(err, namedBy(vs)))
	}
	return rep, nil
}

// mirrorRepoCharts pushes the charts of classic repositories among the
// changed versions of vs (pushRepoCharts), after every image and OCI
// artifact copied, and adds their results to rep.
func mirrorRepoCharts(ctx context.Context, mc *mirror.Client, vs []*model.Version, rep *mirror.Report) error {
	res, err := pushRepoCharts(ctx, mc, vs)
	if rep != nil {
		rep.Images = append(rep.Images, res...)
	}
	return err
}

// mirrorTargets returns what mirroring the changed versions of vs means:
// extra and their related images (Version.Images), and their bundles and
// OCI charts, each under its version's tag at the destination (also when
// spec.artifact pins it by digest). A chart of a classic repository is no
// target: pushRepoCharts pushes it.
func mirrorTargets(vs []*model.Version, extra []mirror.Target) (related, bundles []mirror.Target) {
	related = extra
	for _, v := range model.ChangedVersions(vs) {
		for _, ref := range v.Images {
			related = append(related, mirror.Target{Ref: ref})
		}
		if !repoChart(v) {
			bundles = append(bundles, mirror.Target{Ref: v.Ref(), Tag: v.Manifest.Tag()})
		}
	}
	return related, bundles
}

// namedBy maps each image reference to the manifest lines that make the run
// mirror it: a spec.relatedImages entry, or the spec.artifact line of an
// artifact that deploys it (a bundle's CSV: model.Content.Images).
func namedBy(vs []*model.Version) map[string][]string {
	out := map[string][]string{}
	add := func(ref, where string) {
		for _, w := range out[ref] {
			if w == where {
				return
			}
		}
		out[ref] = append(out[ref], where)
	}
	for _, v := range vs {
		m := v.Manifest
		for j, r := range m.Spec.RelatedImages {
			add(r, fmt.Sprintf("%s:%d (spec.relatedImages)", m.Path, m.Lines[fmt.Sprintf("spec.relatedImages.%d", j)]))
		}
		if c := v.Content; c != nil {
			for _, r := range c.Images() {
				add(r, v.Where()+" (deployed by "+c.ImagesFrom()+")")
			}
		}
		add(m.Spec.Artifact, v.Where()+" (spec.artifact)")
	}
	return out
}

// annotateImageErrors appends to each *mirror.ImageError the manifest lines
// that name its image, so the user knows which file to fix.
func annotateImageErrors(err error, named map[string][]string) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		var ie *mirror.ImageError
		if errors.As(e, &ie) && len(named[ie.Ref]) > 0 {
			where := named[ie.Ref]
			if len(where) > 3 {
				where = append(where[:3:3], fmt.Sprintf("and %d more", len(named[ie.Ref])-3))
			}
			e = &mirror.ImageError{Ref: ie.Ref, Input: ie.Input, Err: fmt.Errorf("%w; named by %s", ie.Err, strings.Join(where, ", "))}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// mirrorErr is an *InputError when every image failed for a reason only
// the package repo can fix (a reference that does not exist), else an
// infrastructure error.
func mirrorErr(err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	input := true
	for _, e := range errs {
		var ie *mirror.ImageError
		if !errors.As(e, &ie) || !ie.Input {
			input = false
		}
	}
	wrapped := fmt.Errorf("mirror failed, nothing committed:\n%w", err)
	if input {
		return &InputError{Err: wrapped}
	}
	return wrapped
}

// sourceHosts returns the registries the manifests name (spec.artifact and
// spec.relatedImages): the only ones that get the source credentials.
func sourceHosts(ms []*manifest.PackageManifest) []string {
	set := map[string]bool{}
	for _, m := range ms {
		// An OCI chart's spec.artifact may start with oci:// (a chart
		// repository's https:// URL is no registry and parses as none).
		for _, ref := range append([]string{strings.TrimPrefix(m.Spec.Artifact, "oci://")}, m.Spec.RelatedImages...) {
			if r, err := name.ParseReference(ref); err == nil {
				set[r.Context().RegistryStr()] = true
			}
		}
	}
	hosts := make([]string, 0, len(set))
	for h := range set {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	return hosts
}
