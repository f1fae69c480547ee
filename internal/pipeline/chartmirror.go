package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/ocicatalog"
)

// repoChart reports whether v is a chart of a classic chart repository
// (spec.artifact an https URL with spec.chart): no registry serves it, so
// the copier cannot copy it, and pushRepoCharts pushes it as OCI instead.
func repoChart(v *model.Version) bool {
	if v.Kind() != manifest.TypeChart {
		return false
	}
	src, err := manifest.ParseChartSource(v.Manifest.Spec.Artifact, v.Manifest.Spec.Chart)
	return err == nil && src.OCI == ""
}

// hasRepoChart reports whether a changed version of vs is a chart of a
// classic repository (repoChart), which the mirror pushes even when it
// copies nothing else.
func hasRepoChart(vs []*model.Version) bool {
	for _, v := range model.ChangedVersions(vs) {
		if repoChart(v) {
			return true
		}
	}
	return false
}

// pushRepoCharts pushes the chart of each changed version of vs that
// comes from a classic repository to the destination, as the OCI
// artifact `helm push` makes of it (kind.ChartImage: the archive the
// repository served, byte for byte, as the chart layer), at the
// repository the destination mapping gives its reference (Version.Ref:
// the repository's host and path, the chart's name) and the version's
// tag. A chart already there with the same digest costs one HEAD. The
// results, one per chart, go into the run's report and the records (the
// chart's digest: VersionRecord.BundleDigest). Errors are
// *mirror.ImageError naming the chart's reference: a chart not read
// (input), a destination that refuses or fails.
func pushRepoCharts(ctx context.Context, mc *mirror.Client, vs []*model.Version) ([]mirror.Result, error) {
	var out []mirror.Result
	var errs []error
	for _, v := range model.ChangedVersions(vs) {
		if !repoChart(v) {
			continue
		}
		r, err := pushRepoChart(ctx, mc, v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, *r)
	}
	return out, errors.Join(errs...)
}

// pushRepoChart is pushRepoCharts for one version.
func pushRepoChart(ctx context.Context, mc *mirror.Client, v *model.Version) (*mirror.Result, error) {
	ref := v.Ref()
	fail := func(input bool, err error) (*mirror.Result, error) {
		return nil, &mirror.ImageError{Ref: ref, Input: input, Err: err}
	}
	archive := kind.ChartArchive(v)
	if archive == nil {
		return fail(true, fmt.Errorf("%s: the chart was not read", v.Where()))
	}
	img, err := kind.ChartImage(ref, archive)
	if err != nil {
		return fail(true, err)
	}
	src, err := mc.ParseReference(ref)
	if err != nil {
		return fail(true, err)
	}
	dst, err := mc.Destination(src)
	if err != nil {
		return fail(true, err)
	}
	tag := dst.Context().Tag(v.Manifest.Tag())
	pr, err := ocicatalog.PushImage(ctx, img, tag, mc.DstOptions()...)
	if err != nil {
		return fail(false, err)
	}
	return &mirror.Result{Source: ref, Destination: tag.String(), Digest: pr.Digest, Skipped: !pr.Pushed}, nil
}
