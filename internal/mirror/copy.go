package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/operator-publish/publish/internal/registry"
)

// engine is the state of one mirror run: the bound on operations in flight
// and what was already done, so that each blob is uploaded once per run
// and mounted from there into other repositories of the destination.
type engine struct {
	c   *Client
	sem chan struct{}

	mu     sync.Mutex
	blobs  map[string]*future  // "<dst repo>@<digest>": present in that repository
	landed map[string]*landing // "<dst registry>@<digest>": first repository it reached
	tags   map[string]*tagList // source repository -> its tags
	refAPI map[string]*future  // source registry -> probe of the referrers API
	noAPI  map[string]bool     // source registries without the referrers API
}

func (c *Client) newEngine() *engine {
	return &engine{
		c:      c,
		sem:    make(chan struct{}, c.opts.Concurrency),
		blobs:  map[string]*future{},
		landed: map[string]*landing{},
		tags:   map[string]*tagList{},
		refAPI: map[string]*future{},
		noAPI:  map[string]bool{},
	}
}

type future struct {
	done chan struct{}
	err  error
}

func (f *future) wait(ctx context.Context) error {
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

type landing struct {
	done chan struct{}
	repo name.Repository
	err  error
}

type tagList struct {
	done chan struct{}
	tags map[string]bool
	err  error
}

// op runs f under the run's bound, with retries (Client.Retry).
func (e *engine) op(ctx context.Context, st *imageState, f func(context.Context) error) error {
	return e.c.retry(ctx, &st.retries, func(ctx context.Context) error {
		select {
		case e.sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		defer func() { <-e.sem }()
		return f(ctx)
	})
}

// head returns the descriptor of ref on side, or nil when it does not
// exist.
func (e *engine) head(ctx context.Context, st *imageState, ref name.Reference, side registry.Side) (*v1.Descriptor, error) {
	var desc *v1.Descriptor
	err := e.op(ctx, st, func(ctx context.Context) error {
		o, err := e.c.remoteOpts(ctx, ref.Context().Registry, side)
		if err != nil {
			return err
		}
		desc, err = remote.Head(ref, o...)
		if err != nil && IsNotFound(err) {
			desc = nil
			return nil
		}
		return err
	})
	return desc, registry.OnSide(side, err)
}

// rawManifest is a manifest to PUT as it is (digest preserved).
type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mt, nil }

// getManifest reads the manifest src@digest and checks its digest.
func (e *engine) getManifest(ctx context.Context, st *imageState, repo name.Repository, digest v1.Hash) ([]byte, types.MediaType, error) {
	var raw []byte
	var mt types.MediaType
	err := e.op(ctx, st, func(ctx context.Context) error {
		o, err := e.c.remoteOpts(ctx, repo.Registry, registry.Source)
		if err != nil {
			return err
		}
		d, err := remote.Get(repo.Digest(digest.String()), o...)
		if err != nil {
			return err
		}
		if h, _, err := v1.SHA256(bytes.NewReader(d.Manifest)); err != nil || h != digest {
			return fmt.Errorf("manifest %s: the source sent content with digest %s", digest, h)
		}
		raw, mt = d.Manifest, d.MediaType
		return nil
	})
	return raw, mt, registry.OnSide(registry.Source, err)
}

// copyManifest copies the manifest with digest from srcRepo to dstRepo,
// everything it references first (the children of an index, the config and
// layers of an image), and writes it to put (a tag or the digest). It
// returns the digests of the children of an index (recursively).
func (e *engine) copyManifest(ctx context.Context, st *imageState, srcRepo, dstRepo name.Repository, digest v1.Hash, put name.Reference) ([]v1.Hash, error) {
	raw, mt, err := e.getManifest(ctx, st, srcRepo, digest)
	if err != nil {
		return nil, &sourceManifestError{digest: digest, err: err}
	}
	var children []v1.Hash
	switch {
	case mt.IsIndex():
		im, err := v1.ParseIndexManifest(bytes.NewReader(raw))
		if err != nil {
			return nil, &PermanentError{Err: fmt.Errorf("index %s: %w", digest, err)}
		}
		ctx, err := checkIndex(ctx, digest, im)
		if err != nil {
			return nil, err
		}
		var wg sync.WaitGroup
		errs := make([]error, len(im.Manifests))
		grand := make([][]v1.Hash, len(im.Manifests))
		for i, child := range im.Manifests {
			children = append(children, child.Digest)
			wg.Add(1)
			go func() {
				defer wg.Done()
				grand[i], errs[i] = e.copyManifest(ctx, st, srcRepo, dstRepo, child.Digest, dstRepo.Digest(child.Digest.String()))
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		for _, g := range grand {
			children = append(children, g...)
		}
	case mt.IsSchema1():
		return nil, &PermanentError{Err: fmt.Errorf("manifest %s is Docker schema 1 (%s), which registries no longer accept: rebuild the image", digest, mt)}
	default:
		// An image, or an artifact in an image manifest (signatures,
		// attestations, SBOMs).
		m, err := v1.ParseManifest(bytes.NewReader(raw))
		if err != nil {
			return nil, &PermanentError{Err: fmt.Errorf("manifest %s (%s): %w", digest, mt, err)}
		}
		blobs := append([]v1.Descriptor{m.Config}, m.Layers...)
		for _, l := range m.Layers {
			if !l.MediaType.IsDistributable() && !e.c.opts.AllowNondistributable {
				return nil, &PermanentError{Err: fmt.Errorf("layer %s is non-distributable (foreign, %s, urls %v): pass --allow-nondistributable to copy it (the destination must accept foreign layers)", l.Digest, l.MediaType, l.URLs)}
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, len(blobs))
		for i, b := range blobs {
			if b.Digest.Hex == "" {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = e.ensureBlob(ctx, st, srcRepo, dstRepo, digest, b)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	err = e.op(ctx, st, func(ctx context.Context) error {
		o, err := e.c.remoteOpts(ctx, dstRepo.Registry, registry.Destination)
		if err != nil {
			return err
		}
		return remote.Put(put, rawManifest{raw: raw, mt: mt}, o...)
	})
	if err != nil {
		return nil, fmt.Errorf("writing manifest %s to %s: %w", digest, put, describePut(err))
	}
	return children, nil
}

// describePut adds what to do to a manifest the destination refused.
func describePut(err error) error {
	var te *transport.Error
	if errors.As(err, &te) {
		for _, d := range te.Errors {
			if d.Code == transport.ManifestBlobUnknownErrorCode && te.StatusCode >= 500 {
				return fmt.Errorf("%w (the destination refuses the manifest's foreign layers: distribution accepts them only with validation.manifests.urls.allow)", err)
			}
		}
	}
	return err
}

// srcBlob is a blob read from the source registry on demand, described by
// its manifest descriptor (so the media type and size are the manifest's).
type srcBlob struct {
	e        *engine
	repo     name.Repository
	manifest v1.Hash // of the image that names the blob
	desc     v1.Descriptor
	ctx      context.Context
}

func (b *srcBlob) Digest() (v1.Hash, error)            { return b.desc.Digest, nil }
func (b *srcBlob) Size() (int64, error)                { return b.desc.Size, nil }
func (b *srcBlob) MediaType() (types.MediaType, error) { return b.desc.MediaType, nil }
func (b *srcBlob) Compressed() (io.ReadCloser, error) {
	rc, err := b.compressed()
	return rc, registry.OnSide(registry.Source, err)
}

func (b *srcBlob) compressed() (io.ReadCloser, error) {
	o, err := b.e.c.remoteOpts(b.ctx, b.repo.Registry, registry.Source)
	if err != nil {
		return nil, err
	}
	var l v1.Layer
	if len(b.desc.URLs) > 0 {
		// A foreign layer may live only at its URLs: the image's layer
		// tries the registry, then the URLs.
		img, err := remote.Image(b.repo.Digest(b.manifest.String()), o...)
		if err != nil {
			return nil, err
		}
		l, err = img.LayerByDigest(b.desc.Digest)
		if err != nil {
			return nil, err
		}
	} else if l, err = remote.Layer(b.repo.Digest(b.desc.Digest.String()), o...); err != nil {
		return nil, err
	}
	rc, err := l.Compressed() // checks the digest as it is read
	if err != nil {
		return nil, err
	}
	// And says who lied when the bytes are not the digest's: the error
	// surfaces through the upload to the destination.
	return registry.VerifyReader(rc, b.repo.RegistryStr(), b.desc.Digest, b.desc.Size), nil
}

// ensureBlob makes the blob desc present in dstRepo: once per repository
// and run; uploaded from the source once per destination registry and run,
// mounted from the first repository that has it into the others.
func (e *engine) ensureBlob(ctx context.Context, st *imageState, srcRepo, dstRepo name.Repository, manifest v1.Hash, desc v1.Descriptor) error {
	key := dstRepo.String() + "@" + desc.Digest.String()
	e.mu.Lock()
	f, ok := e.blobs[key]
	if !ok {
		f = &future{done: make(chan struct{})}
		e.blobs[key] = f
	}
	lkey := dstRepo.Registry.String() + "@" + desc.Digest.String()
	l, landed := e.landed[lkey]
	owner := !landed
	if owner && !ok {
		l = &landing{done: make(chan struct{})}
		e.landed[lkey] = l
	}
	e.mu.Unlock()
	if ok {
		return f.wait(ctx)
	}
	var from *name.Repository
	if !owner {
		if err := func() error {
			select {
			case <-l.done:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}(); err != nil {
			f.err = err
			close(f.done)
			return err
		}
		if l.err == nil && l.repo.String() != dstRepo.String() {
			from = &l.repo
		}
	}
	err := e.op(ctx, st, func(ctx context.Context) error {
		o, err := e.c.remoteOpts(ctx, dstRepo.Registry, registry.Destination)
		if err != nil {
			return err
		}
		var layer v1.Layer
		layer, err = partial.CompressedToLayer(&srcBlob{e: e, repo: srcRepo, manifest: manifest, desc: desc, ctx: ctx})
		if err != nil {
			return err
		}
		if from != nil {
			layer = &remote.MountableLayer{Layer: layer, Reference: from.Digest(desc.Digest.String())}
		}
		return remote.WriteLayer(dstRepo, layer, o...)
	})
	if err != nil {
		err = fmt.Errorf("copying blob %s to %s: %w", desc.Digest, dstRepo, err)
	}
	f.err = err
	close(f.done)
	if owner {
		l.repo, l.err = dstRepo, err
		close(l.done)
	}
	return err
}

// verify checks that ref has digest at the destination and that every
// child of an index is there with its digest.
func (e *engine) verify(ctx context.Context, st *imageState, ref name.Reference, digest v1.Hash, children []v1.Hash) error {
	refs := []name.Reference{ref}
	want := []v1.Hash{digest}
	for _, c := range children {
		refs = append(refs, ref.Context().Digest(c.String()))
		want = append(want, c)
	}
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := e.head(ctx, st, refs[i], registry.Destination)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("verifying %s: %w", refs[i], err)
			case d == nil:
				errs[i] = fmt.Errorf("verifying: %s is missing at the destination after the copy", refs[i])
			case d.Digest != want[i]:
				errs[i] = fmt.Errorf("verifying: %s has digest %s at the destination, the source has %s", refs[i], d.Digest, want[i])
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sourceTags lists the tags of repo once per run. A repository the
// registry does not list (404) has no tags.
func (e *engine) sourceTags(ctx context.Context, st *imageState, repo name.Repository) (map[string]bool, error) {
	e.mu.Lock()
	tl, ok := e.tags[repo.String()]
	if !ok {
		tl = &tagList{done: make(chan struct{})}
		e.tags[repo.String()] = tl
	}
	e.mu.Unlock()
	if ok {
		select {
		case <-tl.done:
			return tl.tags, tl.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var tags []string
	err := e.op(ctx, st, func(ctx context.Context) error {
		o, err := e.c.remoteOpts(ctx, repo.Registry, registry.Source)
		if err != nil {
			return err
		}
		tags, err = remote.List(repo, o...)
		if IsNotFound(err) {
			tags, err = nil, nil
		}
		return err
	})
	tl.tags = map[string]bool{}
	for _, t := range tags {
		tl.tags[t] = true
	}
	if err != nil {
		tl.err = fmt.Errorf("listing the tags of %s to find signatures (--signatures=false skips them): %w", repo, registry.OnSide(registry.Source, err))
	}
	close(tl.done)
	return tl.tags, tl.err
}

// referrers returns the referrers of digest in repo by the OCI referrers
// API, or nil when the registry does not offer the API (asked once per
// registry and run; the referrers tag schema is read from the tag list).
func (e *engine) referrers(ctx context.Context, st *imageState, repo name.Repository, digest v1.Hash) ([]v1.Descriptor, error) {
	reg := repo.Registry.String()
	e.mu.Lock()
	if e.noAPI[reg] {
		e.mu.Unlock()
		return nil, nil
	}
	probe, probing := e.refAPI[reg]
	first := !probing
	if first {
		probe = &future{done: make(chan struct{})}
		e.refAPI[reg] = probe
	}
	e.mu.Unlock()
	if !first {
		if err := probe.wait(ctx); err != nil {
			return nil, err
		}
		e.mu.Lock()
		no := e.noAPI[reg]
		e.mu.Unlock()
		if no {
			return nil, nil
		}
	}
	var out []v1.Descriptor
	noAPI := false
	err := e.op(ctx, st, func(ctx context.Context) error {
		tr, err := e.c.conn(ctx, repo.Registry, registry.Source)
		if err != nil {
			return err
		}
		im, ok, err := fetchReferrers(ctx, tr, repo, digest)
		if err != nil {
			return err
		}
		if !ok {
			noAPI = true
			return nil
		}
		out = im.Manifests
		return nil
	})
	if first {
		if noAPI {
			e.mu.Lock()
			e.noAPI[reg] = true
			e.mu.Unlock()
		}
		probe.err = err
		close(probe.done)
	}
	if err != nil {
		return nil, fmt.Errorf("listing the referrers of %s@%s (--signatures=false skips them): %w", repo, digest, err)
	}
	return out, nil
}

// signatures copies the cosign signature and attestation tags
// (sha256-<hex>.sig, .att), the referrers tag schema index (sha256-<hex>)
// and the referrers from the OCI referrers API of each digest from srcRepo
// to dstRepo. It returns how many manifests it copied.
func (e *engine) signatures(ctx context.Context, st *imageState, srcRepo, dstRepo name.Repository, digests []v1.Hash) error {
	tags, err := e.sourceTags(ctx, st, srcRepo)
	if err != nil {
		return err
	}
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	add := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for _, d := range digests {
		base := d.Algorithm + "-" + d.Hex
		// The referrers API first: a referrer's manifest must be at the
		// destination before the fallback index that lists it. Every
		// platform child is asked too: a per-platform signature is a
		// referrer of the child.
		{
			refs, err := e.referrers(ctx, st, srcRepo, d)
			if err != nil {
				return err
			}
			for _, r := range refs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := e.copyTo(ctx, st, srcRepo, dstRepo, r.Digest, dstRepo.Digest(r.Digest.String())); err != nil {
						add(fmt.Errorf("referrer %s: %w", r.Digest, err))
					}
				}()
			}
			wg.Wait()
		}
		for _, suffix := range []string{".sig", ".att", ""} {
			tag := base + suffix
			if !tags[tag] {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				src, dst := srcRepo.Tag(tag), dstRepo.Tag(tag)
				sd, err := e.head(ctx, st, src, registry.Source)
				if err != nil || sd == nil {
					if err == nil {
						return // deleted since the listing
					}
					add(fmt.Errorf("signature tag %s: %w", tag, err))
					return
				}
				cp := e.copyTo
				if suffix == "" {
					cp = e.copyReferrersTag
				}
				if err := cp(ctx, st, srcRepo, dstRepo, sd.Digest, dst); err != nil {
					add(fmt.Errorf("signature tag %s: %w", tag, err))
				}
			}()
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// copyTo copies the manifest digest to put unless put already has it.
func (e *engine) copyTo(ctx context.Context, st *imageState, srcRepo, dstRepo name.Repository, digest v1.Hash, put name.Reference) error {
	dd, err := e.head(ctx, st, put, registry.Destination)
	if err != nil {
		return err
	}
	if dd != nil && dd.Digest == digest {
		st.sawSignature(digest)
		return nil
	}
	children, err := e.copyManifest(ctx, st, srcRepo, dstRepo, digest, put)
	if err != nil {
		return err
	}
	st.signatures.Add(1)
	if err := e.verify(ctx, st, put, digest, children); err != nil {
		return err
	}
	st.sawSignature(digest)
	return nil
}

// copyImage mirrors one target. The no-op case (the destination reference
// already has the source digest) costs one HEAD at the destination, plus
// one HEAD at the source when the source is a tag.
func (e *engine) copyImage(ctx context.Context, ref, tag string) (*Result, error) {
	fail := func(input bool, err error) (*Result, error) {
		return nil, &ImageError{Ref: ref, Input: input, Err: err}
	}
	src, err := e.c.ParseReference(ref)
	if err != nil {
		return fail(true, err)
	}
	// read is where src is read (a source mirror's copy, or src): the
	// destination and the result keep src.
	read, err := e.c.ReadReference(ref)
	if err != nil {
		return fail(true, err)
	}
	dst, err := e.c.Destination(src)
	if err != nil {
		return fail(true, err)
	}
	if tag != "" {
		if dst, err = e.c.ParseReference(dst.Context().String() + ":" + tag); err != nil {
			return fail(true, fmt.Errorf("destination tag %q: %w", tag, err))
		}
	}
	st := &imageState{}
	var digest v1.Hash
	if d, ok := src.(name.Digest); ok {
		if digest, err = v1.NewHash(d.DigestStr()); err != nil {
			return fail(true, err)
		}
	} else {
		sd, err := e.head(ctx, st, read, registry.Source)
		if err != nil {
			return fail(false, e.c.Describe("reading from source", read.Context().RegistryStr(), err))
		}
		if sd == nil {
			return fail(true, e.c.Describe("reading from source", read.Context().RegistryStr(), notFound(read)))
		}
		digest = sd.Digest
	}
	res := &Result{Source: ref, Destination: dst.String(), Digest: digest.String()}
	dd, err := e.head(ctx, st, dst, registry.Destination)
	if err != nil {
		return fail(false, e.c.Describe("checking destination", dst.Context().RegistryStr(), err))
	}
	var children []v1.Hash
	if dd != nil && dd.Digest == digest {
		res.Skipped = true
	} else {
		children, err = e.copyManifest(ctx, st, read.Context(), dst.Context(), digest, dst)
		if err == nil {
			err = e.verify(ctx, st, dst, digest, children)
		}
		if err != nil {
			input := false
			var sm *sourceManifestError
			if _, ok := src.(name.Digest); ok && errors.As(err, &sm) && sm.digest == digest && IsNotFound(sm.err) {
				input = true // a pinned digest the source does not have
			}
			res.Retries = int(st.retries.Load())
			return fail(input, e.c.Describe("copying", dst.Context().RegistryStr(), err))
		}
	}
	if !e.c.opts.SkipSignatures {
		if err := e.signatures(ctx, st, read.Context(), dst.Context(), append([]v1.Hash{digest}, children...)); err != nil {
			return fail(false, e.c.Describe("copying signatures", dst.Context().RegistryStr(), err))
		}
	}
	res.Retries = int(st.retries.Load())
	res.Signatures = int(st.signatures.Load())
	if ds := st.signatureDigests(); len(ds) > 0 {
		res.SignatureDigests = ds
	}
	return res, nil
}

// notFound is the error for a source reference that does not exist.
func notFound(ref name.Reference) error {
	return &transport.Error{StatusCode: 404, Errors: []transport.Diagnostic{{Code: transport.ManifestUnknownErrorCode, Message: "manifest unknown: " + ref.String()}}}
}

// sourceManifestError is a manifest that could not be read from the
// source: the digest tells the manifest asked for from its children.
type sourceManifestError struct {
	digest v1.Hash
	err    error
}

func (e *sourceManifestError) Error() string {
	return fmt.Sprintf("reading manifest %s from the source: %v", e.digest, e.err)
}
func (e *sourceManifestError) Unwrap() error { return e.err }

// fetchReferrers lists the referrers of repo@digest by the OCI referrers
// API (distribution-spec "Listing Referrers") over the authenticated
// transport tr. ok is false when the registry does not offer the API:
// it answers 404, 400 or 406, or with another content type than an OCI
// image index (go-containerregistry's test, which it reports only as
// error text).
func fetchReferrers(ctx context.Context, tr http.RoundTripper, repo name.Repository, digest v1.Hash) (im *v1.IndexManifest, ok bool, err error) {
	u := url.URL{Scheme: repo.Registry.Scheme(), Host: repo.RegistryStr(), Path: "/v2/" + repo.RepositoryStr() + "/referrers/" + digest.String()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Accept", string(types.OCIImageIndex))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	if err := transport.CheckError(resp, http.StatusOK, http.StatusNotFound, http.StatusBadRequest, http.StatusNotAcceptable); err != nil {
		return nil, false, err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != string(types.OCIImageIndex) {
		return nil, false, nil
	}
	im, err = v1.ParseIndexManifest(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, false, fmt.Errorf("referrers of %s@%s: %w", repo, digest, err)
	}
	return im, true, nil
}
