package pipeline

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"golang.org/x/sync/errgroup"
)

// ImageVerifier checks an image's signatures against the publish.yaml
// verify policy before anything is mirrored (docs/signatures.md). It is
// internal/verify's Verifier; the pipeline knows it only through this
// interface, so that sigstore-go is linked where a policy is used.
type ImageVerifier interface {
	// Verify checks ref with the source registry options opts; results
	// are cached by digest for the run.
	Verify(ctx context.Context, ref string, opts []remote.Option) model.Verification
	// Unmatched returns the publish.yaml path and the policy entries that
	// match none of refs.
	Unmatched(refs []string) (file string, entries []config.VerifyEntry)
}

// verifyAt verifies ref read at read (a source mirror's copy of it) when
// iv can (internal/verify's VerifyAt), else ref where it is.
func verifyAt(ctx context.Context, iv ImageVerifier, ref, read string, opts []remote.Option) model.Verification {
	if rv, ok := iv.(interface {
		VerifyAt(ctx context.Context, ref, read string, opts []remote.Option) model.Verification
	}); ok {
		return rv.VerifyAt(ctx, ref, read, opts)
	}
	return iv.Verify(ctx, ref, opts)
}

// ImageSigner signs an image publish pushed (the OCI catalog artifact):
// internal/sign's Key, known here only through this interface like
// ImageVerifier. Sign returns a description of what it wrote, for the
// log (the referrer's digest, the .sig tag).
type ImageSigner interface {
	Sign(ctx context.Context, repo name.Repository, desc v1.Descriptor, opts []remote.Option) (string, error)
}

// Rule IDs of the verification findings (docs/lint-rules.md).
const (
	RuleVerifyUnsigned  = lint.RuleVerifyUnsigned
	RuleVerifyUntrusted = lint.RuleVerifyUntrusted
	RuleVerifyIdentity  = lint.RuleVerifyIdentity
	RuleVerifyPattern   = lint.RuleVerifyPattern
)

// verifyTarget is one image a version names, with the manifest line that
// names it.
type verifyTarget struct {
	v    *model.Version
	ref  string
	line int
	what string // the kind ("bundle"), "related image" or "image the bundle's CSV deploys"
}

// verifyTargets lists the artifact (a bundle, an OCI chart) and related
// images of vs, each with the manifest line naming it: spec.artifact for
// the artifact and for the images it deploys (model.Content.Images: the
// bundle's CSV, the chart's render), the spec.relatedImages entry for the
// others. A chart of a classic repository is in no registry and has no
// signature to check: its images are listed, not the chart.
func verifyTargets(vs []*model.Version) []verifyTarget {
	var out []verifyTarget
	for _, v := range vs {
		m := v.Manifest
		if !repoChart(v) { // a classic repository's chart is in no registry: no signature to check, only its images
			out = append(out, verifyTarget{v: v, ref: v.Ref(), line: m.Lines["spec.artifact"], what: v.Kind()})
		}
		related := map[string]int{}
		for j, r := range m.Spec.RelatedImages {
			if _, ok := related[r]; !ok {
				related[r] = m.Lines[fmt.Sprintf("spec.relatedImages.%d", j)]
			}
		}
		for _, img := range v.Images {
			line, ok := related[img]
			what := "related image"
			if !ok {
				line, what = m.Lines["spec.artifact"], "image the "+v.Kind()+" deploys"
				if v.Content != nil {
					what = "image " + v.Content.ImagesFrom() + " deploys"
				}
			}
			out = append(out, verifyTarget{v: v, ref: img, line: line, what: what})
		}
	}
	return out
}

// verifyStage verifies the bundle and every related image of vs with iv
// (nil: no policy, nothing verified) at most 8 at once, and returns the
// findings (an error under enforce, a warning under warn, at the manifest
// line naming the image), every result by image reference, and the
// registry failures that kept an image or its signatures from being read
// (model.Verification.Err): those are no finding of the image, the
// caller stops with them (exit 2).
func verifyStage(ctx context.Context, iv ImageVerifier, mc *mirror.Client, vs []*model.Version) ([]lint.Finding, map[string]model.Verification, error) {
	if iv == nil {
		return nil, nil, nil
	}
	targets := verifyTargets(vs)
	results := map[string]model.Verification{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	seen := map[string]bool{}
	for _, t := range targets {
		if seen[t.ref] {
			continue
		}
		seen[t.ref] = true
		g.Go(func() error {
			var r model.Verification
			if read := mc.ReadRef(t.ref); read != t.ref {
				r = verifyAt(gctx, iv, t.ref, read, mc.SrcOptions())
			} else {
				r = iv.Verify(gctx, t.ref, mc.SrcOptions())
			}
			mu.Lock()
			results[t.ref] = r
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	var out []lint.Finding
	var failed []error
	reported := map[string]bool{}
	for _, t := range targets {
		r := results[t.ref]
		if r.Err != nil {
			if !reported[t.ref] {
				reported[t.ref] = true
				failed = append(failed, fmt.Errorf("%s:%d: the signatures of %s %s could not be checked (publish.yaml verify): %w", t.v.Manifest.Path, t.line, t.what, t.ref, mc.Describe("reading from source", "", r.Err)))
			}
			continue
		}
		if f, ok := verifyFinding(t, r); ok {
			out = append(out, f)
		}
	}
	lint.Sort(out)
	return out, results, errors.Join(failed...)
}

// verifyFinding is the finding of a failed verification r of t.
func verifyFinding(t verifyTarget, r model.Verification) (lint.Finding, bool) {
	if !r.Failed() {
		return lint.Finding{}, false
	}
	rule := map[string]string{model.VerifyUnsigned: RuleVerifyUnsigned, model.VerifyUntrusted: RuleVerifyUntrusted, model.VerifyIdentity: RuleVerifyIdentity}[r.Status]
	info, _ := lint.Rule(rule)
	sev := lint.Error
	if r.Mode == config.VerifyWarn {
		sev = lint.Warning
	}
	img := r.Image
	if r.Digest != "" {
		img += " (" + r.Digest + ")"
	}
	m := t.v.Manifest
	return lint.Finding{Rule: rule, Severity: sev, Artifact: m.Artifact, Version: m.Version.String(), Path: m.Path, Line: t.line,
		Message: fmt.Sprintf("%s %s is %s: expected %s (%s, mode %s); found %s", t.what, img, r.Status, r.Expected, r.Policy, r.Mode, r.Found),
		Hint:    info.Hint}, true
}

// unmatchedFindings warns about the policy entries that match none of the
// images of vs (a typo in the pattern verifies nothing), at their
// publish.yaml line, relative to source.
func unmatchedFindings(iv ImageVerifier, source string, vs []*model.Version) []lint.Finding {
	if iv == nil {
		return nil
	}
	var refs []string
	for _, t := range verifyTargets(vs) {
		refs = append(refs, t.ref)
	}
	file, entries := iv.Unmatched(refs)
	if rel, err := filepath.Rel(source, file); err == nil {
		file = filepath.ToSlash(rel)
	}
	info, _ := lint.Rule(RuleVerifyPattern)
	var out []lint.Finding
	for _, e := range entries {
		out = append(out, lint.Finding{Rule: RuleVerifyPattern, Severity: lint.Warning, Path: file, Line: e.Line,
			Message: fmt.Sprintf("verify pattern %q matches no bundle or related image of the package repo", e.Match), Hint: info.Hint})
	}
	return out
}

// verifySummary is the log of a verification stage: one line counting
// results by status, then one line per artifact of vs (the versions
// verified) counting its images signed, unsigned and failed
// (model.Verification.Outcome) and naming the unsigned and failed ones.
func verifySummary(vs []*model.Version, results map[string]model.Verification) []string {
	n := map[string]int{}
	for _, r := range results {
		n[r.Status]++
	}
	var keys []string
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := fmt.Sprintf("verify: %d images", len(results))
	for _, k := range keys {
		s += fmt.Sprintf(", %d %s", n[k], k)
	}
	lines := []string{s}
	byArtifact := artifactSignatures(vs, results)
	var arts []string
	for a := range byArtifact {
		arts = append(arts, a)
	}
	sort.Strings(arts)
	for _, a := range arts {
		c := byArtifact[a]
		lines = append(lines, fmt.Sprintf("verify: %s: %s", a, c.Detail()))
	}
	return lines
}

// artifactSignatures sorts the images of vs (their bundles and related
// images) by the outcome of their verification in results, per artifact
// name; an artifact none of whose images was verified is left out.
func artifactSignatures(vs []*model.Version, results map[string]model.Verification) map[string]*model.SignatureCounts {
	out := map[string]*model.SignatureCounts{}
	for _, t := range verifyTargets(vs) {
		r, ok := results[t.ref]
		if !ok || r.Outcome() == "" {
			continue
		}
		a := t.v.Manifest.Artifact
		if out[a] == nil {
			out[a] = &model.SignatureCounts{}
		}
		out[a].Add(r)
	}
	return out
}

// addVerification adds the verification of one cluster's result r to
// res, the result of a run of several: every image's, and per artifact
// the images signed, unsigned and failed.
func (res *Result) addVerification(r *Result) {
	for ref, v := range r.Verified {
		if res.Verified == nil {
			res.Verified = map[string]model.Verification{}
		}
		res.Verified[ref] = v
	}
	for a, c := range r.Signatures {
		if res.Signatures == nil {
			res.Signatures = map[string]*model.SignatureCounts{}
		}
		if res.Signatures[a] == nil {
			res.Signatures[a] = &model.SignatureCounts{}
		}
		res.Signatures[a].Merge(*c)
	}
}
