package pipeline

// Charts in the offline archive (docs/airgap.md#charts): package carries
// each chart as the OCI artifact `publish run` puts at the destination,
// push --catalog reads it back there.

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
)

// withBuiltCharts gives the entry of each chart of a classic repository
// among selected (repoChart; its entry in images named by Version.Ref,
// archiveImages) the OCI artifact `publish run` pushes of it
// (kind.ChartImage: the archive the repository served, byte for byte, as
// the chart layer), so that the archive carries the very digest the
// destination gets. An OCI chart's entry is read from its registry like
// any image, its digest unchanged. Errors: *InputError naming the
// manifest of a chart that was not read or does not pack.
func withBuiltCharts(images []archive.Image, selected []*model.Version) ([]archive.Image, error) {
	byRef := map[string]int{}
	for i, im := range images {
		if im.Bundle {
			byRef[im.Ref] = i
		}
	}
	for _, v := range selected {
		if !repoChart(v) {
			continue
		}
		data := kind.ChartArchive(v)
		if data == nil {
			return nil, inputErr(fmt.Errorf("%s: chart %s was not read", v.Where(), v.Ref()))
		}
		img, err := kind.ChartImage(v.Ref(), data)
		if err != nil {
			return nil, inputErr(fmt.Errorf("%s: %w", v.Where(), err))
		}
		if i, ok := byRef[v.Ref()]; ok {
			images[i].Built = img
		}
	}
	return images, nil
}

// readPushed is prepare's Read step of push --catalog: each version's
// artifact as pushed, read at the destination, counted in
// res.BundlesRead: a bundle (its CSV display name and description when
// the manifest has none), or a chart (kind.ReadChartArchive for env's
// cluster: the values file and Kubernetes version the archive carries
// for it, carriedChartClusters; its archive is what the chart sources of
// the catalog are unpacked from). Errors: *InputError for a reference that cannot be
// mapped or a chart that is none (kind.ChartError), else the registry's, naming the
// artifact.
func readPushed(mc *mirror.Client, dstOpts []remote.Option, env kind.Env, res *Result) func(context.Context, []*model.Version) error {
	return func(ctx context.Context, vs []*model.Version) error {
		for _, v := range vs {
			src, err := mc.ParseReference(v.Ref())
			if err != nil {
				return inputErr(err)
			}
			dst, err := mc.Destination(src)
			if err != nil {
				return inputErr(err)
			}
			if v.Kind() == manifest.TypeChart {
				img, err := remote.Image(dst, append(dstOpts, remote.WithContext(ctx))...)
				if err != nil {
					return fmt.Errorf("reading the pushed chart %s: %w", dst, err)
				}
				data, err := kind.ChartLayer(dst.String(), img)
				if err == nil {
					err = kind.ReadChartArchive(env, v, data)
				}
				var ce *kind.ChartError
				if errors.As(err, &ce) {
					return inputErr(fmt.Errorf("%s: the pushed chart %s: %w", v.Where(), dst, err))
				}
				if err != nil {
					return fmt.Errorf("reading the pushed chart %s: %w", dst, err)
				}
				res.BundlesRead++
				continue
			}
			b, err := bundle.Fetch(ctx, dst.String(), dstOpts...)
			if err != nil {
				return fmt.Errorf("reading the pushed bundle %s: %w", dst, err)
			}
			v.SetContent(kind.BundleContent(b))
			res.BundlesRead++
		}
		return nil
	}
}
