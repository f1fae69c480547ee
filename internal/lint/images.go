package lint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	yaml "go.yaml.in/yaml/v3"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/registry"
)

// imageChecks bounds the concurrent ImageChecker calls.
const imageChecks = 8

// findingAt makes a finding of f at node n (1:1 when nil).
func (f *mfile) findingAt(rule string, n *yaml.Node, bundlePath, msg, hint string) Finding {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line, max(n.Column, 1)
	}
	x := newFinding(rule, f.path, line, col, msg, hint)
	x.BundlePath = bundlePath
	x.Artifact, x.Version = f.artifact, f.version
	return x
}

// refKey is an image reference split for comparison.
type refKey struct{ raw, repo, tag, digest string }

func parseRefKey(s string) refKey {
	s = strings.TrimSpace(s)
	k := refKey{raw: s}
	rest := s
	if i := strings.Index(rest, "@"); i >= 0 {
		k.digest, rest = rest[i+1:], rest[:i]
	}
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		k.tag, rest = rest[i+1:], rest[:i]
	}
	k.repo = rest
	if r, err := name.NewRepository(rest, name.WeakValidation); err == nil {
		k.repo = r.Name()
	}
	if k.tag == "" && k.digest == "" {
		k.tag = "latest"
	}
	return k
}

// same reports whether a and b name the same image: the same repository
// and the same digest when both have one, else the same tag.
func (a refKey) same(b refKey) bool {
	if a.raw == b.raw {
		return true
	}
	if a.repo != b.repo {
		return false
	}
	if a.digest != "" && b.digest != "" {
		return a.digest == b.digest
	}
	return a.tag != "" && a.tag == b.tag
}

func anySame(k refKey, list []refKey) bool {
	for _, l := range list {
		if k.same(l) {
			return true
		}
	}
	return false
}

// imageRules compares the images the CSV deploys with spec.relatedImages.
func (f *mfile) imageRules(b *bundle.Bundle) []Finding {
	var out []Finding
	var related []refKey
	for _, r := range f.related {
		related = append(related, parseRefKey(r.ref))
	}
	var deployed []refKey
	for _, img := range b.Images {
		deployed = append(deployed, parseRefKey(img))
	}
	at := f.node("spec.relatedImages")
	if f.vals["spec.relatedImages"] == nil {
		at = f.node("spec")
	}
	// An invalid entry (manifest/related-image) still names its image.
	listed := append([]refKey(nil), related...)
	for _, r := range f.relatedText {
		listed = append(listed, parseRefKey(r))
	}
	for _, d := range deployed {
		if err := registry.CheckReference(d.raw); err != nil {
			out = append(out, f.findingAt(RuleImagesMissingRelated, at, bundleManifestsPath,
				fmt.Sprintf("image %q, which the CSV deploys, is not a valid image reference: %v; publish refuses to mirror it", d.raw, err), ""))
			continue
		}
		if !anySame(d, listed) {
			out = append(out, f.findingAt(RuleImagesMissingRelated, at, bundleManifestsPath,
				fmt.Sprintf("image %s, which the CSV deploys, is not declared in the manifest's spec.relatedImages: publish mirrors it from the CSV anyway, but the manifest is the reviewed list of what the version ships (and only the registries it names get the source credentials)", d.raw), ""))
		}
	}
	for i, r := range related {
		if !anySame(r, deployed) {
			out = append(out, f.findingAt(RuleImagesUnusedRelated, f.related[i].node, "",
				fmt.Sprintf("spec.relatedImages entry %s is not an image the CSV deploys (containers, initContainers, RELATED_IMAGE_* variables, spec.relatedImages)", r.raw), ""))
		}
	}
	return out
}

// normPlatform normalises os/arch[/variant]: arm64/v8 is arm64, arm is arm/v7.
func normPlatform(p string) string {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(p)), "/")
	switch {
	case len(parts) == 3 && parts[1] == "arm64" && parts[2] == "v8":
		parts = parts[:2]
	case len(parts) == 2 && parts[1] == "arm":
		parts = append(parts, "v7")
	}
	return strings.Join(parts, "/")
}

type imageResult struct {
	platforms []string
	err       error
}

// checkImages asks c about every spec.relatedImages entry of ms (each
// reference once, imageChecks at a time) and reports missing images and
// platforms.
func checkImages(ctx context.Context, c ImageChecker, ms []*manifest.PackageManifest, byPath map[string]*mfile) []Finding {
	set := map[string]bool{}
	for _, m := range ms {
		for _, r := range byPath[m.Path].related {
			set[r.ref] = true
		}
	}
	refs := sortedKeys(set)
	results := make(map[string]imageResult, len(refs))
	var mu sync.Mutex
	sem := make(chan struct{}, imageChecks)
	var wg sync.WaitGroup
	for _, r := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res imageResult
			select {
			case sem <- struct{}{}:
				res = checkOne(ctx, c, r)
				<-sem
			case <-ctx.Done():
				res.err = ctx.Err()
			}
			mu.Lock()
			results[r] = res
			mu.Unlock()
		}()
	}
	wg.Wait()

	var out []Finding
	for _, m := range ms {
		f := byPath[m.Path]
		var want []string
		for _, a := range f.arch {
			if !slices.Contains(want, normPlatform(a)) {
				want = append(want, normPlatform(a))
			}
		}
		done := map[string]bool{}
		for _, ri := range f.related {
			r, at := ri.ref, ri.node
			if done[r] {
				continue
			}
			done[r] = true
			res := results[r]
			switch {
			case errors.Is(res.err, ErrImageNotFound):
				out = append(out, f.findingAt(RuleImagesNotFound, at, "", fmt.Sprintf("image %s does not exist in the source registry", r), ""))
				continue
			case res.err != nil:
				out = append(out, f.findingAt(RuleImagesCheck, at, "", fmt.Sprintf("image %s could not be checked: %v", r, res.err), ""))
				continue
			}
			if res.platforms == nil {
				if len(want) > 1 {
					out = append(out, f.findingAt(RuleImagesPlatform, at, "", fmt.Sprintf("image %s is a single-platform image, but spec.arch lists %d platforms (%s)", r, len(want), strings.Join(want, ", ")), ""))
				}
				continue
			}
			have := map[string]bool{}
			for _, p := range res.platforms {
				have[normPlatform(p)] = true
			}
			var missing []string
			for _, w := range want {
				if !have[w] {
					missing = append(missing, w)
				}
			}
			if len(missing) > 0 {
				offers := strings.Join(res.platforms, ", ")
				if offers == "" {
					offers = "none"
				}
				out = append(out, f.findingAt(RuleImagesPlatform, at, "", fmt.Sprintf("image %s lacks platform %s of spec.arch (it offers %s)", r, strings.Join(missing, ", "), offers), ""))
			}
		}
	}
	return out
}

// checkOne calls c, turning a panic into an error.
func checkOne(ctx context.Context, c ImageChecker, ref string) (res imageResult) {
	defer func() {
		if r := recover(); r != nil {
			res = imageResult{err: fmt.Errorf("image checker crashed: %v", r)}
		}
	}()
	p, err := c.Platforms(ctx, ref)
	return imageResult{platforms: p, err: err}
}

// RegistryChecker is the ImageChecker of the source registry: it GETs the
// image manifest (an image index lists the platforms) and reads no blob.
type RegistryChecker struct {
	// Parse parses references (e.g. registry.Client.ParseReference, which
	// knows about plain-HTTP registries); nil uses name.ParseReference.
	Parse func(string) (name.Reference, error)
	// Options are the remote options: auth, transport, user agent.
	Options []remote.Option
}

// Platforms implements ImageChecker.
func (c RegistryChecker) Platforms(ctx context.Context, ref string) ([]string, error) {
	parse := c.Parse
	if parse == nil {
		parse = func(s string) (name.Reference, error) { return name.ParseReference(s) }
	}
	r, err := parse(ref)
	if err != nil {
		return nil, err
	}
	desc, err := remote.Get(r, append([]remote.Option{remote.WithContext(ctx)}, c.Options...)...)
	if err != nil {
		if registry.IsNotFound(err) {
			return nil, fmt.Errorf("%s: %w", ref, ErrImageNotFound)
		}
		return nil, err
	}
	if !desc.MediaType.IsIndex() {
		return nil, nil
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	return registry.IndexPlatforms(im), nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
