package kind

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"golang.org/x/sync/errgroup"
)

// bundleKind is spec.type bundle: an OLM bundle image (registry+v1), read
// with bundle.Fetch.
type bundleKind struct{}

// Name is manifest.TypeBundle.
func (bundleKind) Name() string { return manifest.TypeBundle }

// Key is the bundle image reference (spec.artifact): a bundle reads the
// same for every cluster.
func (bundleKind) Key(_ Env, v *model.Version) string { return v.Ref() }

// Read reads the bundles of vs, at most 8 at once, and records each in its
// version (BundleContent). A missing or invalid bundle
// (*bundle.NotFoundError, *bundle.InvalidError) is recorded as the
// version's ReadErr; registry failures are returned, joined and sorted,
// each "<manifest>:<line>: <what to do>" (env.Client.Describe).
func (bundleKind) Read(ctx context.Context, env Env, vs []*model.Version) error {
	mc := env.Client
	var mu sync.Mutex
	var failed []error
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, v := range vs {
		g.Go(func() error {
			read := mc.ReadRef(v.Ref()) // a source mirror's copy, or the reference
			key, c := env.Prelint.cached(gctx, v, read, mc)
			defer env.Prelint.step(c != nil)
			if c != nil {
				v.SetContent(c)
				return nil
			}
			b, err := bundle.Fetch(gctx, read, mc.SrcOptions()...)
			if err == nil {
				v.SetContent(env.Prelint.lint(v, b, key))
				return nil
			}
			var nf *bundle.NotFoundError
			var inv *bundle.InvalidError
			if errors.As(err, &nf) || errors.As(err, &inv) {
				v.SetReadErr(err)
				return nil
			}
			host := strings.SplitN(read, "/", 2)[0]
			mu.Lock()
			defer mu.Unlock()
			failed = append(failed, &readError{v: v, err: mc.Describe("reading bundle "+v.Ref(), host, errors.Unwrap(err))})
			return nil
		})
	}
	_ = g.Wait()
	sort.Slice(failed, func(i, j int) bool { return failed[i].Error() < failed[j].Error() })
	return errors.Join(failed...)
}

// Lint gives the lint engine the bundle of v, with its
// metadata/annotations.yaml (lint.Input.Bundles, Annotations), or the
// error reading it (lint.Input.BundleErrors: bundle/not-found,
// bundle/one-csv, bundle/invalid).
func (bundleKind) Lint(in *lint.Input, _ Env, v *model.Version) {
	p := v.Manifest.Path
	if v.ReadErr != nil {
		if in.BundleErrors == nil {
			in.BundleErrors = map[string]error{}
		}
		in.BundleErrors[p] = v.ReadErr
	}
	if c, ok := v.Content.(bundleContent); ok && c.linted != nil && c.linted.path == p {
		if in.Prelinted == nil {
			in.Prelinted = map[string][]lint.Finding{}
		}
		in.Prelinted[p] = c.linted.findings
	}
	if b := BundleOf(v); b != nil {
		if in.Bundles == nil {
			in.Bundles = map[string]*bundle.Bundle{}
		}
		if in.Annotations == nil {
			in.Annotations = map[string]map[string]string{}
		}
		in.Bundles[p], in.Annotations[p] = b, b.Annotations
	}
}

// readError is a registry failure reading the artifact of a version:
// "<manifest>:<line>: <what to do>".
type readError struct {
	v   *model.Version
	err error
}

func (e *readError) Error() string { return e.v.Where() + ": " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// bundleContent is the model.Content of a version of kind bundle; linted
// is set when the bundle was linted as it was read (Prelint).
type bundleContent struct {
	b      *bundle.Bundle
	linted *linted
}

// linted are the findings of a bundle's own rules, made as it was read for
// the manifest at path.
type linted struct {
	path     string
	findings []lint.Finding
}

// lint is the content of v whose bundle b was just read: with p, b
// linted for v's manifest, made slim (or condensed: Prelint.Condense) and
// stored under key in p's cache when p says so, or only made slim
// (SlimOnly); without p, b as it is.
func (p *Prelint) lint(v *model.Version, b *bundle.Bundle, key string) model.Content {
	if p == nil {
		return BundleContent(b)
	}
	if p.SlimOnly {
		b.Slim()
		return BundleContent(b)
	}
	data, ok := p.Files[v.Manifest.Path]
	if !ok {
		return BundleContent(b)
	}
	fs := lint.BundleRules(p.Config, lint.File{Path: v.Manifest.Path, Data: data}, b, b.Annotations)
	if p.Slim {
		slim := true
		if p.Condense != nil {
			slim = p.Condense(v, b)
		} else {
			b.Slim()
		}
		if slim && p.Cache != nil && key != "" {
			_ = p.Cache.Put(key, b, fs) // without the entry, the next command reads the bundle again
		}
	}
	return bundleContent{b: b, linted: &linted{path: v.Manifest.Path, findings: fs}}
}

// step tells p's Progress of one bundle done.
func (p *Prelint) step(cached bool) {
	if p != nil && p.Progress != nil {
		p.Progress(cached)
	}
}

// cached looks the bundle of v (read from ref) up in p's cache: its key
// (the manifest file and the bundle's digest, asked of the registry unless
// ref is pinned by digest; "" without a cache or when the registry did not
// answer, which the read then reports) and, on a hit, the content.
func (p *Prelint) cached(ctx context.Context, v *model.Version, ref string, mc *mirror.Client) (string, model.Content) {
	if p == nil || p.Cache == nil || !p.Slim {
		return "", nil
	}
	data, ok := p.Files[v.Manifest.Path]
	if !ok {
		return "", nil
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", nil
	}
	digest := ""
	if d, ok := r.(name.Digest); ok {
		digest = d.DigestStr()
	} else {
		desc, err := remote.Head(r, append([]remote.Option{remote.WithContext(ctx)}, mc.SrcOptions()...)...)
		if err != nil {
			return "", nil
		}
		digest = desc.Digest.String()
	}
	key := p.Cache.Key(data, digest)
	if p.Condense != nil {
		// A condensed bundle is not the slim one: an entry of its own.
		key = p.Cache.Key([]byte(key+"\x00condensed"), digest)
	}
	b, fs, ok := p.Cache.Get(key)
	if !ok {
		return key, nil
	}
	b.Ref = ref
	return key, bundleContent{b: b, linted: &linted{path: v.Manifest.Path, findings: fs}}
}

// BundleContent returns b as the content of a version of kind bundle
// (model.Version.SetContent); nil for a nil b.
func BundleContent(b *bundle.Bundle) model.Content {
	if b == nil {
		return nil
	}
	return bundleContent{b: b}
}

// BundleOf returns the bundle read for v, nil when v was not read or is of
// another kind: for the stages that are about bundles only (the olm
// target's file-based catalog, the bundle lint rules).
func BundleOf(v *model.Version) *bundle.Bundle {
	if c, ok := v.Content.(bundleContent); ok {
		return c.b
	}
	return nil
}

// Images are the images the bundle's CSV deploys (bundle.Bundle.Images).
func (c bundleContent) Images() []string { return c.b.Images }

// ImagesFrom is "the bundle's CSV".
func (bundleContent) ImagesFrom() string { return "the bundle's CSV" }

// Info is the CSV's display name and description.
func (c bundleContent) Info() (string, string) { return c.b.DisplayName, c.b.Description }
