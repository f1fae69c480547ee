package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/scratch"
	"github.com/operator-publish/publish/internal/verify"
)

// verifyArchiveImages verifies, offline, the signatures the archive c
// carries (its cosign tags and referrers, Contents.SignatureBlobs) of
// each image of c (the OCI catalogs left out) with the policy of its trust
// material (trust/policy.json, its keys and trusted roots), as push
// verifies them at the site: in each rule's mode (enforce, if-signed,
// warn, off). It writes one line counting the results and one per
// artifact (signed, unsigned, failed), warns through warnf for an image
// that fails a rule of mode warn, and returns an *InputError naming each
// image that fails (its index.json entry and artifacts). Nothing happens
// without trust material.
func verifyArchiveImages(w io.Writer, warnf func(string, ...any), c *archive.Contents) error {
	if len(c.Trust) == 0 {
		return nil
	}
	dir, err := scratch.MkdirTemp("", "archive-trust")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	v, err := verify.FromTrust(c.Trust, dir)
	if err != nil {
		return &pipeline.InputError{Err: fmt.Errorf("the archive's trust material: %w", err)}
	}
	if v == nil {
		return nil
	}
	var all model.SignatureCounts
	byArtifact := map[string]*model.SignatureCounts{}
	var failed []error
	n := 0
	for i, im := range c.Images {
		if im.Subject != "" || im.Catalog != "" {
			continue
		}
		r := v.VerifyArchive(im.Ref, c)
		if r.Status == model.VerifyNotRequired {
			continue
		}
		n++
		all.Add(r)
		for _, a := range im.Artifacts() {
			if byArtifact[a] == nil {
				byArtifact[a] = &model.SignatureCounts{}
			}
			byArtifact[a].Add(r)
		}
		if !r.Failed() {
			continue
		}
		where := fmt.Sprintf("index.json manifests[%d]", i)
		if arts := im.Artifacts(); len(arts) > 0 {
			where += fmt.Sprintf(" (artifacts %v)", arts)
		}
		msg := fmt.Sprintf("%s: %s is %s: expected %s (%s of the archive's trust material, mode %s); found %s", where, r.Image, r.Status, r.Expected, r.Policy, r.Mode, r.Found)
		if r.Mode == "warn" {
			warnf("%s", msg)
			continue
		}
		failed = append(failed, errors.New(msg))
	}
	fmt.Fprintf(w, "images    verified with the archive's trust material: %d images, %s\n", n, all)
	var arts []string
	for a := range byArtifact {
		arts = append(arts, a)
	}
	sort.Strings(arts)
	for _, a := range arts {
		fmt.Fprintf(w, "artifact  %s: %s\n", a, byArtifact[a].Detail())
	}
	if len(failed) > 0 {
		return &pipeline.InputError{Err: fmt.Errorf("the signatures in the archive do not verify with its trust material:\n%w", errors.Join(failed...))}
	}
	return nil
}
