package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
)

// verifyPushed verifies, with the policy of the archive's trust material
// (o.Trust), each image pr pushed (or found) at the destination, offline:
// the keys and trusted roots come from the archive, the signatures from
// the destination, where push put them. It logs the warnings of the
// trust material and one line counting the results; an image that fails
// its rule (model.Verification.Failed; a warning under mode warn) is an
// *InputError naming each, and nothing is committed. Nothing happens
// without o.Trust or trust material. It returns the results by source
// reference.
func verifyPushed(ctx context.Context, o PushOptions, mc *mirror.Client, opts []remote.Option, pr *archive.PushResult) (map[string]model.Verification, error) {
	if o.Trust == nil || pr.Contents == nil || len(pr.Contents.Trust) == 0 {
		return nil, nil
	}
	iv, warnings, err := o.Trust(pr.Contents.Trust)
	if err != nil {
		return nil, inputErr(fmt.Errorf("the archive's trust material: %w; nothing committed", err))
	}
	for _, w := range warnings {
		o.Options.warnf("push: %s", w)
	}
	if iv == nil {
		return nil, nil
	}
	results := map[string]model.Verification{}
	var failed []error
	for _, im := range pr.Images {
		if im.Catalog != "" {
			continue
		}
		dst, err := mc.ParseReference(im.Destination)
		if err != nil {
			return nil, err
		}
		v := verifyAt(ctx, iv, im.Source, dst.Context().Digest(im.Digest).String(), opts)
		results[im.Source] = v
		switch {
		case v.Err != nil:
			return nil, describePush(mc, v.Err)
		case v.Failed() && v.Mode == "warn":
			o.Options.warnf("push: %s is %s: expected %s (%s); found %s", v.Image, v.Status, v.Expected, v.Policy, v.Found)
		case v.Failed():
			failed = append(failed, fmt.Errorf("%s is %s at %s: expected %s (%s of the archive's trust material, mode %s); found %s", v.Image, v.Status, im.Destination, v.Expected, v.Policy, v.Mode, v.Found))
		}
	}
	var c model.SignatureCounts
	for _, v := range results {
		c.Add(v)
	}
	o.Options.logf("push: verify with the archive's trust material: %d images, %s", len(results), c)
	if len(failed) > 0 {
		return nil, inputErr(fmt.Errorf("the signatures at the destination do not verify with the archive's trust material; nothing committed:\n%w", errors.Join(failed...)))
	}
	return results, nil
}

// attestPushed is attestMirrored for what push put at the site (pr's
// images, the OCI catalogs left out), with verified the results of
// verifyPushed: a verification summary per digest a rule verified, and
// with Options.SignImages a signature of the site's key. The inputs of a
// summary are the archive's signatures of that digest, now at the site.
// Then each chart pushed is signed (signCharts).
func attestPushed(ctx context.Context, o PushOptions, mc *mirror.Client, opts []remote.Option, pr *archive.PushResult, verified map[string]model.Verification) error {
	var sigs []string
	if pr.Contents != nil {
		for _, e := range pr.Contents.Images {
			if e.Subject != "" {
				sigs = append(sigs, e.Desc.Digest.String())
			}
		}
	}
	rep := &mirror.Report{}
	for _, im := range pr.Images {
		if im.Catalog == "" {
			rep.Images = append(rep.Images, mirror.Result{Source: im.Source, Destination: im.Destination, Digest: im.Digest, Skipped: im.Skipped, SignatureDigests: sigs})
		}
	}
	if err := attestMirrored(ctx, o.Options, mc, opts, rep, verified); err != nil {
		return err
	}
	return signCharts(ctx, o.Options, mc, opts, pushedCharts(pr))
}
