package pipeline

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
)

// helmConfigMediaType is the config media type of a Helm chart in an OCI
// registry (helm.sh/helm/v4/pkg/registry.ConfigMediaType): how push tells
// a chart among the archive's artifacts.
const helmConfigMediaType = "application/vnd.cncf.helm.config.v1+json"

// signCharts signs, with o.Sign (--cosign-key), each chart at the
// destination that charts names (results of the mirror or of push: the
// chart's destination and digest) with a Sigstore bundle referrer, as the
// OCI catalog is signed; with an ImageAttester never the .sig tag (a
// copied OCI chart's holds its vendor's signature). A digest that has a
// signature by o.Sign's key already (ImageAttester.Signed; another
// signer: any bundle referrer) is left as it is. Nothing happens without
// o.Sign. Errors name the chart and --cosign-key; the caller commits
// nothing.
func signCharts(ctx context.Context, o Options, mc *mirror.Client, opts []remote.Option, charts []mirror.Result) error {
	if o.Sign == nil || len(charts) == 0 {
		return nil
	}
	at, _ := o.Sign.(ImageAttester)
	opts = append(append([]remote.Option(nil), opts...), remote.WithContext(ctx))
	n := 0
	for _, r := range charts {
		dst, err := mc.ParseReference(r.Destination)
		if err != nil {
			return err
		}
		repo := dst.Context()
		d := repo.Digest(r.Digest)
		desc, err := remote.Head(d, opts...)
		if err != nil {
			return fmt.Errorf("signing the chart %s (--cosign-key): %w; nothing committed", d, err)
		}
		var signed bool
		if at != nil {
			signed, err = at.Signed(ctx, repo, *desc, opts)
		} else {
			signed, err = hasBundle(ctx, d, opts)
		}
		if err == nil && signed {
			continue
		}
		if at != nil {
			_, err = at.SignReferrer(ctx, repo, *desc, opts)
		} else {
			_, err = o.Sign.Sign(ctx, repo, *desc, opts)
		}
		if err != nil {
			return fmt.Errorf("signing the chart %s (--cosign-key): %w; nothing committed", d, err)
		}
		n++
	}
	o.logf("sign: %d charts signed at the destination, %d were signed already", n, len(charts)-n)
	return nil
}

// mirroredCharts are the results of rep for the charts among vs (by
// their reference, Version.Ref): what signCharts signs after a run's
// mirror.
func mirroredCharts(vs []*model.Version, rep *mirror.Report) []mirror.Result {
	if rep == nil {
		return nil
	}
	refs := map[string]bool{}
	for _, v := range vs {
		if v.Kind() == manifest.TypeChart {
			refs[v.Ref()] = true
		}
	}
	var out []mirror.Result
	for _, r := range rep.Images {
		if refs[r.Source] {
			out = append(out, r)
		}
	}
	return out
}

// pushedCharts are the artifacts pr pushed whose config is a Helm
// chart's (helmConfigMediaType, from the archive's manifests): what
// signCharts signs after a push.
func pushedCharts(pr *archive.PushResult) []mirror.Result {
	if pr.Contents == nil {
		return nil
	}
	var out []mirror.Result
	for _, im := range pr.Images {
		m := pr.Contents.Manifests[im.Digest]
		if !im.Bundle || m == nil || m.MediaType.IsIndex() || len(m.Children) == 0 || string(m.Children[0].MediaType) != helmConfigMediaType {
			continue
		}
		out = append(out, mirror.Result{Source: im.Source, Destination: im.Destination, Digest: im.Digest, Skipped: im.Skipped})
	}
	return out
}
