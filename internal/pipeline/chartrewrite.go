package pipeline

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/ocicatalog"
)

// rewriteImagesValues is the one value of publish.yaml
// clusters.<cluster>.rewriteImages (render.Config.RewriteImages).
const rewriteImagesValues = "values"

// rewriteCharts is the opt-in rewrite of a cluster's charts
// (render.Config.RewriteImages "values"): for each chart version of vs
// read in this run and listed in next, the images of its values are
// rewritten to where the mirror put them (kind.RewriteChartImages, the
// mapping of mc: the destination of each image of the version), the new
// chart version (<version>+mirror.<id>) is pushed beside the chart at
// the destination as the OCI artifact `helm push` makes (tag: '+'
// written '_') and signed with o.Sign (--cosign-key) as every chart. The
// result, by version, is what the catalog carries instead of the chart
// (chartSources, uploadCharts); a chart whose values name none of its
// images is kept as it is, with a log line. Errors name the chart; the
// caller commits nothing.
func rewriteCharts(ctx context.Context, o Options, mc *mirror.Client, opts []remote.Option, next []model.ArtifactRecord, vs []*model.Version) (map[model.Key]*kind.RewrittenChart, error) {
	if o.Render.RewriteImages != rewriteImagesValues || mc == nil {
		return nil, nil
	}
	listed := presentVersions(next)
	out := map[model.Key]*kind.RewrittenChart{}
	var pushed []mirror.Result
	for _, v := range vs {
		archive := kind.ChartArchive(v)
		if v.Kind() != manifest.TypeChart || archive == nil || !listed[v.Key()] {
			continue
		}
		repos, err := destinationRepos(mc, v.Images)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.Where(), err)
		}
		rc, err := kind.RewriteChartImages(v.Ref(), archive, repos)
		if err != nil {
			return nil, inputErr(fmt.Errorf("%s: rewriting the images of chart %s: %w", v.Where(), v.Ref(), err))
		}
		if rc == nil {
			o.logf("charts: %s %s: its values name none of its images, kept as it is (publish.yaml clusters.%s.rewriteImages)", v.Key().Artifact, v.Key().Version, o.Cluster)
			continue
		}
		r, err := pushRewritten(ctx, mc, opts, v.Ref(), rc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w; nothing committed", v.Where(), err)
		}
		o.logf("charts: %s %s rewritten (%d image values) as %s, %s@%s", v.Key().Artifact, v.Key().Version, rc.Rewrites, rc.Version, r.Destination, r.Digest)
		out[v.Key()] = rc
		pushed = append(pushed, *r)
	}
	if err := signCharts(ctx, o, mc, opts, pushed); err != nil {
		return nil, err
	}
	return out, nil
}

// destinationRepos maps the source repository of each image
// (name.Repository.Name()) to its repository at the destination (mc's
// mapping, as the mirror copied it).
func destinationRepos(mc *mirror.Client, images []string) (map[string]string, error) {
	repos := map[string]string{}
	for _, img := range images {
		src, err := name.ParseReference(img)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", img, err)
		}
		dst, err := mc.Destination(src)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", img, err)
		}
		repos[src.Context().Name()] = dst.Context().Name()
	}
	return repos, nil
}

// pushRewritten pushes the rewritten chart rc of the chart ref to the
// chart's repository at the destination, tagged kind.ChartTag of its
// version. A digest already there costs one HEAD.
func pushRewritten(ctx context.Context, mc *mirror.Client, opts []remote.Option, ref string, rc *kind.RewrittenChart) (*mirror.Result, error) {
	img, err := kind.ChartImage(ref, rc.Archive)
	if err != nil {
		return nil, err
	}
	src, err := mc.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	dst, err := mc.Destination(src)
	if err != nil {
		return nil, err
	}
	tag := dst.Context().Tag(kind.ChartTag(rc.Version))
	pr, err := ocicatalog.PushImage(ctx, img, tag, opts...)
	if err != nil {
		return nil, fmt.Errorf("pushing the rewritten chart %s: %w", tag, err)
	}
	return &mirror.Result{Source: ref, Destination: tag.String(), Digest: pr.Digest, Skipped: !pr.Pushed}, nil
}
