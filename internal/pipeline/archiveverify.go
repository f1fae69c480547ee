package pipeline

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
)

// ArchiveVerifier verifies an image's signatures in an archive's OCI
// layout instead of a registry: internal/verify's Verifier.VerifyArchive
// (the policy of the archive's trust material), known here only through
// this interface like ImageVerifier.
type ArchiveVerifier interface {
	VerifyArchive(ref string, c *archive.Contents) model.Verification
}

// VerifyArchive verifies, offline, each image of c (archive.Verify's
// contents; the signatures and OCI catalogs left out) with av against
// the signatures c carries (cosign tags and referrers), as verifyPushed
// verifies them at the site: in each rule's mode (enforce, if-signed,
// warn, off). It writes to w one line counting the results and one per
// artifact (signed, unsigned, failed), warns through warnf for an image
// that fails a rule of mode warn, and returns an *InputError naming each
// image that fails (the line of a PackageManifest of the archive that
// names it, spec.relatedImages or spec.artifact, when one does; its
// index.json entry and artifacts; the rule and what was found). The
// results are by source reference.
func VerifyArchive(w io.Writer, warnf func(string, ...any), av ArchiveVerifier, c *archive.Contents) (map[string]model.Verification, error) {
	results := map[string]model.Verification{}
	var all model.SignatureCounts
	byArtifact := map[string]*model.SignatureCounts{}
	var failed []error
	lines := manifestLines(c)
	for i, im := range c.Images {
		if im.Subject != "" || im.Catalog != "" {
			continue
		}
		v := av.VerifyArchive(im.Ref, c)
		if v.Status == model.VerifyNotRequired {
			continue
		}
		results[im.Ref] = v
		all.Add(v)
		for _, a := range im.Artifacts() {
			if byArtifact[a] == nil {
				byArtifact[a] = &model.SignatureCounts{}
			}
			byArtifact[a].Add(v)
		}
		if !v.Failed() {
			continue
		}
		where := fmt.Sprintf("index.json manifests[%d]", i)
		if arts := im.Artifacts(); len(arts) > 0 {
			where += fmt.Sprintf(" (artifacts %v)", arts)
		}
		if l := lines[im.Ref]; l != "" {
			where = l + ": " + where
		}
		msg := fmt.Sprintf("%s: %s is %s: expected %s (%s of the archive's trust material, mode %s); found %s", where, v.Image, v.Status, v.Expected, v.Policy, v.Mode, v.Found)
		if v.Mode == "warn" {
			warnf("%s", msg)
			continue
		}
		failed = append(failed, errors.New(msg))
	}
	fmt.Fprintf(w, "images    verified with the archive's trust material: %d images, %s\n", len(results), all)
	var arts []string
	for a := range byArtifact {
		arts = append(arts, a)
	}
	sort.Strings(arts)
	for _, a := range arts {
		fmt.Fprintf(w, "artifact  %s: %s\n", a, byArtifact[a].Detail())
	}
	if len(failed) > 0 {
		return nil, inputErr(fmt.Errorf("the signatures in the archive do not verify with its trust material:\n%w", errors.Join(failed...)))
	}
	return results, nil
}

// manifestLines maps each image the PackageManifests of c name (their
// spec.artifact and spec.relatedImages, as written) to the first line
// naming it, "packages/PATH:LINE" as the archive holds them.
func manifestLines(c *archive.Contents) map[string]string {
	out := map[string]string{}
	for _, f := range c.Packages {
		m, err := manifest.Parse(archive.PackagesDir+f.Path, f.Data)
		if err != nil {
			continue // archive.Verify parsed it already
		}
		at := func(ref, field string) {
			if l, ok := m.Lines[field]; ok && out[ref] == "" {
				out[ref] = fmt.Sprintf("%s:%d", m.Path, l)
			}
		}
		at(m.Spec.Artifact, "spec.artifact")
		for i, ref := range m.Spec.RelatedImages {
			at(ref, fmt.Sprintf("spec.relatedImages.%d", i))
		}
	}
	return out
}
