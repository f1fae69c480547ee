package mirror

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/operator-publish/publish/internal/registry"
)

// Result is the outcome of mirroring one image.
type Result struct {
	Source      string // reference as given
	Destination string // reference at the destination
	Digest      string // manifest digest, equal at both ends
	Skipped     bool   // the destination already had this digest
	// Signatures counts the signature, attestation and referrer manifests
	// copied with the image (cosign tags, OCI referrers).
	Signatures int
	// SignatureDigests are the digests of every signature, attestation and
	// referrer manifest of the image at the destination after the copy
	// (copied now or there already), sorted; nil with SkipSignatures or
	// when the source has none. They live in the image's repository.
	SignatureDigests []string
	// Retries counts the requests and operations tried again after a
	// transient failure.
	Retries int
}

// Report lists the results of a mirror run, in the order of the input.
type Report struct {
	Images []Result
	// Pending are the targets never tried: the bundles of MirrorTargets
	// when a related image failed (a bundle goes only after every image it
	// deploys). The next run copies them.
	Pending []Target
}

// Copied and Skipped count the images that were copied and skipped.
func (r *Report) Copied() (n int) {
	for _, i := range r.Images {
		if !i.Skipped {
			n++
		}
	}
	return n
}

// ImageError is the failure of one image; Input reports whether retrying
// cannot help (the source image does not exist: fix the reference).
type ImageError struct {
	Ref   string
	Input bool
	Err   error
}

func (e *ImageError) Error() string {
	return strings.TrimSpace(fmt.Sprintf("%s: %v", e.Ref, e.Err))
}
func (e *ImageError) Unwrap() error { return e.Err }

// Mirror copies every image of related, then every image of bundles, to the
// destination (see Destination), so that a bundle is never visible before
// the images it names. All images of a group are worked on at once, under
// one bound for the whole run (Options.Concurrency operations in flight);
// each unique blob is uploaded once per run and mounted into the other
// destination repositories that need it. An image whose digest is already
// at the destination reference is skipped after one HEAD there (and one at
// the source for a tag). Manifests are copied as raw bytes (digests
// preserved), image indexes whole, and after the copy the reference and
// every child of an index are checked by digest at the destination. Cosign
// signature and attestation tags and OCI referrers come along unless
// Options.SkipSignatures. Transient failures are retried (RetryPolicy);
// permanent ones are not (Retryable).
//
// When any related image fails, no bundle is copied. The error joins one
// *ImageError per failed image, sorted by message; the report holds the
// results that succeeded, in input order.
func (c *Client) Mirror(ctx context.Context, related, bundles []string) (*Report, error) {
	return c.MirrorTargets(ctx, targets(related), targets(bundles))
}

// Target is an image to mirror and, optionally, the tag it must carry at the
// destination. A bundle named by digest gets the tag its ArtifactVersion
// names, so that <registry>/<repository>:<tag> exists.
type Target struct {
	Ref string
	Tag string // "": keep the source reference's tag or digest
}

func targets(refs []string) []Target {
	out := make([]Target, 0, len(refs))
	for _, r := range refs {
		out = append(out, Target{Ref: r})
	}
	return out
}

// MirrorTargets is Mirror with a destination tag per image.
func (c *Client) MirrorTargets(ctx context.Context, related, bundles []Target) (*Report, error) {
	rep := &Report{}
	e := c.newEngine()
	rr, err := e.copyAll(ctx, related, "related images")
	rep.Images = append(rep.Images, rr...)
	if err != nil {
		rep.Pending = uniqueTargets(bundles)
		return rep, err
	}
	br, err := e.copyAll(ctx, bundles, "bundles")
	rep.Images = append(rep.Images, br...)
	return rep, err
}

// copyAll mirrors ts concurrently; the engine's bound limits the requests
// in flight, and imagesPerRequest times it the images: started all at
// once, thousands of images would take turns at every request and all end
// together at the end (no progress line, nothing finished when the run is
// interrupted); bounded, they end one after the other at the same
// throughput. A failed image does not stop the others: the error joins one
// *ImageError per failed image, sorted by message. what names the images
// in the progress lines ("bundles").
func (e *engine) copyAll(ctx context.Context, ts []Target, what string) ([]Result, error) {
	refs := uniqueTargets(ts)
	prog := e.c.newProgress(what, len(refs))
	defer prog.End()
	results := make([]*Result, len(refs))
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	images := make(chan struct{}, imagesPerRequest*max(1, cap(e.sem)))
	for i, ref := range refs {
		wg.Add(1)
		images <- struct{}{} // an image that waits for another's blob waits for one in flight
		go func() {
			defer wg.Done()
			defer func() { <-images }()
			r, err := e.copyImage(ctx, ref.Ref, ref.Tag)
			prog.Step(r != nil && r.Skipped, err != nil)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			results[i] = r
		}()
	}
	wg.Wait()
	var out []Result
	for _, r := range results {
		if r != nil {
			out = append(out, *r)
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return out, errors.Join(errs...)
}

// imagesPerRequest is how many images copyAll has in flight per request
// the engine allows at once: enough that every request slot stays busy
// while an image waits for an answer.
const imagesPerRequest = 8

func uniqueTargets(in []Target) []Target {
	seen := map[Target]bool{}
	var out []Target
	for _, t := range in {
		if t.Ref != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// Copy mirrors one image or image index to its destination reference.
// Errors are *ImageError.
func (c *Client) Copy(ctx context.Context, ref string) (*Result, error) {
	return c.CopyTo(ctx, ref, "")
}

// CopyTo is Copy with the destination tag set to tag (when not ""): the
// image is read by the source reference (a digest pins it) and written to
// <destination repository>:<tag>.
func (c *Client) CopyTo(ctx context.Context, ref, tag string) (*Result, error) {
	return c.newEngine().copyImage(ctx, ref, tag)
}

// IsNotFound reports whether err is a registry answer saying that the
// manifest or repository does not exist (registry.IsNotFound).
func IsNotFound(err error) bool { return registry.IsNotFound(err) }

// Describe wraps a registry error from go-containerregistry with what was
// being done (what), the registry host, and what to do, naming the flags
// of publish run for the source side (registry.DescribeSide). Prefer
// Client.Describe, which knows the command's flags and the side.
func Describe(what, host string, err error) error {
	return registry.DescribeSide(registry.RunFlags, registry.Source, what, host, err)
}
