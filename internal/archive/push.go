package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-publish/publish/internal/registry"
	"golang.org/x/sync/errgroup"
)

// PushOptions configures Push.
type PushOptions struct {
	// Map gives the destination reference of a source reference (the
	// repository mapping of `publish run`: mirror.Client.Destination).
	Map func(src string) (name.Reference, error)
	// MapCatalog gives the tag the OCI catalog of a cluster (a KindCatalog
	// entry, e.Catalog; images are all the entries) is pushed to; a nil reference (or a nil
	// MapCatalog) leaves it in the archive, reported in
	// PushResult.CatalogsLeft. Its error (as Map's) stops the push before
	// anything is uploaded, as a *MapError.
	MapCatalog func(e IndexEntry, images []IndexEntry) (name.Reference, error)
	// Select, when set, is called once the archive's index.json and
	// PackageManifests are read, before anything is uploaded: keep says
	// which bundle and related image entries are pushed (a subset for one
	// site: push --only, --cluster). A signature goes with the images it
	// signs; OCI catalogs are MapCatalog's. The images left out are
	// reported in PushResult.Left, their blobs are checked but not
	// uploaded. Its error stops the push as a *MapError. nil pushes every
	// image.
	Select func(c *Contents) (keep func(IndexEntry) bool, err error)
	// Remote are the options for the destination registry (auth,
	// transport): its reads, HEADs and manifests.
	Remote []remote.Option
	// Keychain and Transport are the credentials and HTTP transport of the
	// blob uploads and mounts (registry.BlobUploader), the same as
	// Remote's: the registry client's SideKeychain and Transport. nil:
	// anonymous, and go-containerregistry's remote.DefaultTransport (its
	// defaults for an empty Remote).
	Keychain  authn.Keychain
	Transport http.RoundTripper
	// Jobs bounds the blob uploads and mounts in flight (default
	// DefaultJobs). The
	// archive is read once, front to back; a layer goes to its upload
	// through chunks of a pool of Jobs x 16 MiB (pushspool.go), so that
	// the walk reads the next layers while it uploads; configs and blobs
	// up to 1 MiB are read whole. Nothing is written to the disk.
	Jobs int
	// TempDir is not used any more (blobs stream); kept for callers.
	TempDir string
	// Check, when set, is called once with the first image's source
	// reference before anything is pushed (mirror.Client.CheckDestination:
	// a wrong password is one clear error).
	Check func(src string) error
	// SkipPush reads and checks the archive and that every image is already
	// at the destination, and pushes nothing (resources only).
	SkipPush bool
	Limits   Limits
	Progress *Progress

	afterBlob func() // tests: called after each uploaded blob
	fromFile  func() // tests: called for each layer sent from the file
}

// PushedImage is one image of a push.
type PushedImage struct {
	Source      string
	Destination string
	Digest      string
	Bundle      bool
	// Catalog is the cluster of an OCI catalog (KindCatalog), "" for an
	// image.
	Catalog string
	Skipped bool // the destination already had it
}

// PushResult says what Push did.
type PushResult struct {
	Images       []PushedImage // related images first, then bundles
	BlobsPushed  int
	BlobsMounted int // copied between repositories of the destination
	BlobsSkipped int // already at the destination (an earlier, interrupted push)
	BytesPushed  int64
	// SHA256 and Checksum are not set any more: push does not hash the
	// whole file (publish verify does; every byte's gzip CRC-32 and every
	// blob's digest are checked).
	SHA256   string
	Checksum bool
	Contents *Contents
	// Left are the source references of the images Select left out, in
	// index.json order.
	Left []string
	// CatalogsLeft are the clusters whose OCI catalog the archive carries
	// and MapCatalog gave no reference for: not pushed.
	CatalogsLeft []string
	// Signatures counts the signature entries (KindSignature) at the
	// destination after the push, put now or there already; SignaturesPut
	// those put now. With SkipPush they are not looked at.
	Signatures, SignaturesPut int
	// BaseImages counts the images of a differential archive's base found
	// at the destination before anything was pushed.
	BaseImages int
}

// MapError is an error of PushOptions.Map or MapCatalog: an image or OCI
// catalog of the archive has no place at the destination. Nothing was
// uploaded.
type MapError struct{ Err error }

func (e *MapError) Error() string { return e.Err.Error() + " (nothing pushed)" }
func (e *MapError) Unwrap() error { return e.Err }

// rawManifest is a manifest to PUT as it is stored (remote.Taggable).
type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mt, nil }

// Push loads the archive at path into the destination registry: it reads
// the archive once, front to back, checking every entry and blob digest as
// it goes (see Walk and Verify); uploads every config and layer the
// destination lacks to each repository that needs it (one upload, then
// cross-repository mounts); and, only when the whole archive checked out
// (its FILE.sha256 included), puts the manifests: children before indexes,
// related images before bundles, by tag or digest as the source named them.
// What the destination already has (blobs, manifests, tags with the same
// digest) is skipped, so running Push again after an interruption resumes
// where it stopped.
//
// On error nothing is reported as pushed: the error names the archive entry
// or the image, and blobs already uploaded stay (content-addressed; the
// next run skips them).
func Push(ctx context.Context, path string, o PushOptions) (*PushResult, error) {
	if o.Jobs <= 0 {
		o.Jobs = DefaultJobs
	}
	opts := append(append([]remote.Option(nil), o.Remote...), remote.WithContext(ctx))
	puller, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, err
	}
	rp, err := remote.NewPusher(opts...)
	if err != nil {
		return nil, err
	}
	hctx, stop := context.WithCancel(ctx)
	up := registry.NewBlobUploader(o.Keychain, o.Transport)
	p := &pusher{o: o, puller: puller, rp: rp, up: up, res: &PushResult{}, ctx: ctx, pool: newChunkPool(o.Jobs), hctx: hctx}
	defer func() {
		stop()
		if p.headsDone != nil {
			<-p.headsDone
		}
	}()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Jobs)
	p.g, p.gctx = g, gctx
	var blob func(e Entry, body io.Reader, owners []int) error
	if !o.SkipPush {
		blob = p.blob
	}
	vr, walkErr := walkFileWith(path, o.Limits, o.Progress, blob, func(c *Contents) { p.c = c }, false)
	waitErr := g.Wait()
	if ee := (*EntryError)(nil); errors.As(waitErr, &ee) {
		return nil, ee // an upload the registry refused as damaged: the archive
	}
	resume := func(err error) error {
		if registry.NeedsFix(err) {
			// 401, 403, a TLS setup: the same command fails the same
			// way; the description (registry.Describe) says what to fix.
			return &RegistryError{Err: fmt.Errorf("%s: %w", path, err)}
		}
		return &RegistryError{Err: fmt.Errorf("%s: %w (nothing tagged; run the same command again to resume: what was pushed is skipped)", path, err)}
	}
	if walkErr != nil {
		var re *RegistryError
		if !errors.As(walkErr, &re) {
			return nil, walkErr // the archive itself: damaged, hostile, incomplete
		}
		if waitErr != nil {
			walkErr = waitErr // the upload that failed first, not the cancellation it caused
		}
		return nil, resume(walkErr)
	}
	if waitErr != nil {
		return nil, resume(waitErr)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.res.SHA256, p.res.Checksum, p.res.Contents = vr.SHA256, vr.Checksum, vr.Contents
	err = nil
	if !o.SkipPush {
		err = p.mountBase(ctx)
	}
	if err == nil {
		err = p.manifests(ctx)
	}
	if err != nil {
		if me := (*MapError)(nil); errors.As(err, &me) {
			return nil, me
		}
		return nil, &RegistryError{Err: err}
	}
	return p.res, nil
}

type pusher struct {
	o      PushOptions
	puller *remote.Puller
	rp     *remote.Pusher         // manifests (and the base's blobs: mountBase)
	up     *registry.BlobUploader // blobs: uploads and mounts
	c      *Contents
	res    *PushResult
	g      *errgroup.Group
	gctx   context.Context
	ctx    context.Context // Push's: gctx ends with the blob uploads
	pool   *chunkPool      // the spools' chunks
	hctx   context.Context // manifestHeads': ends when Push returns

	heads     map[string]registry.Found // by destination@digest, once headsDone is closed
	headsDone chan struct{}

	once     sync.Once
	dsts     []name.Reference // per index.json entry; nil: not pushed
	mapErr   error
	missing  map[string][]name.Repository // blob digest -> repositories that need it, in name order
	firstHas map[string]bool              // blob digest -> the first of missing has it (mounted from there into the rest)
	mu       sync.Mutex
}

// dest maps every index.json entry once.
func (p *pusher) dest() error {
	p.once.Do(func() {
		keep := func(IndexEntry) bool { return true }
		if p.o.Select != nil {
			k, err := p.o.Select(p.c)
			if err != nil {
				p.mapErr = &MapError{Err: err}
				return
			}
			keep = k
		}
		first := ""
		for _, im := range p.c.Images {
			if im.Catalog != "" {
				var d name.Reference
				var err error
				if p.o.MapCatalog != nil {
					d, err = p.o.MapCatalog(im, p.c.Images)
				}
				if err != nil {
					p.mapErr = &MapError{Err: fmt.Errorf("OCI catalog of cluster %s: %w", im.Catalog, err)}
					return
				}
				if d == nil {
					p.res.CatalogsLeft = append(p.res.CatalogsLeft, im.Catalog)
				}
				p.dsts = append(p.dsts, d)
				continue
			}
			if im.Subject == "" && !keep(im) {
				p.res.Left = append(p.res.Left, im.Ref)
				p.dsts = append(p.dsts, nil)
				continue
			}
			if first == "" {
				first = im.Ref
			}
			d, err := p.o.Map(im.Ref)
			if err != nil {
				p.mapErr = &MapError{Err: fmt.Errorf("%s: %w", im.Ref, err)}
				return
			}
			if im.Tag != "" {
				d = d.Context().Tag(im.Tag)
			}
			p.dsts = append(p.dsts, d)
		}
		if p.o.Select != nil {
			p.dropSignatures()
		}
		if err := p.checkBase(p.ctx); err != nil {
			p.mapErr = err
			return
		}
		if p.o.Check != nil && !p.o.SkipPush && first != "" {
			p.mapErr = p.o.Check(first)
		}
	})
	return p.mapErr
}

// dropSignatures leaves out each signature entry none of whose subject's
// owners (the images that need the manifest they sign) is pushed.
func (p *pusher) dropSignatures() {
	for i, im := range p.c.Images {
		if im.Subject == "" || p.dsts[i] == nil {
			continue
		}
		pushed := false
		for _, o := range p.c.Owners[im.Subject] {
			if p.c.Images[o].Subject == "" && p.dsts[o] != nil {
				pushed = true
				break
			}
		}
		if !pushed {
			p.dsts[i] = nil
		}
	}
}

// precheck asks the destination, for every blob, whether the first
// repository that needs it has it: once, when the first blob is reached
// (every manifest is known by then). A repository needs a blob unless an
// image there that names it is present already (its manifest's answer of
// manifestHeads: a registry holds every blob of a manifest it serves). The
// other repositories that need the blob get it by a mount from the first,
// asked without a HEAD (registry.BlobUploader.Mount), so a fresh push asks
// one HEAD per blob, as crane does, and a push again none.
func (p *pusher) precheck() error {
	if err := p.dest(); err != nil {
		return err
	}
	p.manifestHeads(p.hctx)
	p.missing = map[string][]name.Repository{}
	p.firstHas = map[string]bool{}
	for _, d := range sortedKeys(p.c.wantBlob) {
		has, needs := map[string]bool{}, map[string]name.Repository{}
		for _, o := range p.c.Owners[d] {
			if p.dsts[o] == nil {
				continue // an OCI catalog left in the archive
			}
			repo := p.dsts[o].Context()
			if present, ok := p.knownHead(p.hctx, p.c.Images[o], p.dsts[o]); ok && present {
				has[repo.String()] = true
			}
			needs[repo.String()] = repo
		}
		for _, k := range sortedKeys(needs) {
			if !has[k] {
				p.missing[d] = append(p.missing[d], needs[k])
			}
		}
		if len(p.missing[d]) == 0 && len(needs) > 0 {
			p.res.BlobsSkipped++
		}
	}
	var heads []string
	for d := range p.missing {
		heads = append(heads, d)
	}
	g, gctx := errgroup.WithContext(p.gctx)
	g.SetLimit(8)
	var mu sync.Mutex
	for _, d := range heads {
		g.Go(func() error {
			ok, err := p.hasBlob(gctx, p.missing[d][0], d)
			if err != nil || !ok {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			p.firstHas[d] = true
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for d := range p.firstHas {
		if len(p.missing[d]) == 1 {
			delete(p.missing, d) // there already: the walk still reads it
			p.res.BlobsSkipped++
		}
	}
	return nil
}

// blob is called by the walk for every config and layer.
func (p *pusher) blob(e Entry, body io.Reader, owners []int) error {
	if p.missing == nil {
		if err := p.precheck(); err != nil {
			if me := (*MapError)(nil); errors.As(err, &me) {
				return me // the archive or the mapping, not the registry
			}
			return &RegistryError{Err: err}
		}
	}
	if err := p.gctx.Err(); err != nil {
		return &RegistryError{Err: err}
	}
	repos := p.missing[e.Digest.String()]
	if len(repos) == 0 {
		return nil // already there; the walk still verifies it
	}
	if p.firstHas[e.Digest.String()] {
		p.g.Go(func() error { return p.mountRest(e, repos) })
		return nil // the walk still verifies it
	}
	sb := &streamedBlob{}
	if e.Size <= memBlob {
		// A config or small layer: read whole (its digest checked), so
		// that its upload overlaps the next ones and its body can be
		// sent again (streamedBlob.body's getBody).
		// To the entry's end, where its digest is checked (io.ReadFull
		// would drop the error of a last read that fills the buffer).
		buf := bytes.NewBuffer(make([]byte, 0, e.Size+bytes.MinRead))
		if _, err := buf.ReadFrom(body); err != nil {
			return err
		}
		sb.data = buf.Bytes()
		p.g.Go(func() error { return p.upload(e, repos, sb) })
		return nil
	}
	if path, off, ok := sendFromFile(body); ok {
		// A layer of an uncompressed archive: sent from the file by
		// sendfile, never read here; the registry checks its digest
		// (DIGEST_INVALID: upload) and the walk seeks over it.
		sb.path, sb.off = path, off
		if p.o.fromFile != nil {
			p.o.fromFile()
		}
		p.g.Go(func() error { return p.upload(e, repos, sb) })
		return nil
	}
	// A layer goes through a spool (pushspool.go): the walk reads it to
	// its end (its digest checked) while its upload sends what was read,
	// and goes on with the next entries as the upload continues. A digest
	// that does not match fails the upload's read, so the registry never
	// commits it; a failed upload stops the push (what was committed
	// stays: the next run skips it).
	sp := newSpool(p.pool)
	sb.r = sp
	receiverChecks(body)
	p.g.Go(func() error {
		err := p.upload(e, repos, sb)
		sp.release()
		return err
	})
	switch err := sp.fill(p.gctx, body); {
	case err == nil:
		return nil
	case errors.Is(err, errSpoolGone) || p.gctx.Err() != nil:
		return &RegistryError{Err: err} // the upload failed first (told by Push)
	default:
		return err // the archive: damaged
	}
}

// DefaultJobs is the default of PushOptions.Jobs: 8 uploads keep the
// registry busy while some wait on its answers (measured in
// bench/archive against 4, go-containerregistry's default: docs/airgap.md),
// for 128 MiB of spool for a gzip-compressed archive and none for an
// uncompressed one, whose layers go from the file.
const DefaultJobs = 8

// memBlob is the largest blob push reads whole into memory, in bytes
// (configs and small layers: Jobs of them at most); larger ones go
// through a spool, chunks of a pool reused from layer to layer (reading
// each large layer whole was measured slower: a new buffer per layer
// costs more than the overlap gains).
const memBlob = 1 << 20

// upload puts one blob into the first repository that lacks it (a
// monolithic upload: POST then PUT) and mounts it from there into the
// others.
func (p *pusher) upload(e Entry, repos []name.Repository, sb *streamedBlob) error {
	body, getBody, err := sb.body(e.Size)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &EntryError{Entry: e.Name, Err: fmt.Errorf("truncated: the archive ends inside this entry: %w", ErrCorrupt)}
	} else if err != nil {
		return fmt.Errorf("uploading blob %s to %s: %w", e.Digest, repos[0], err)
	}
	if err := p.up.Upload(p.gctx, repos[0], e.Digest, e.Size, body, getBody); err != nil {
		var te *transport.Error
		if errors.As(err, &te) && len(te.Errors) > 0 && te.Errors[0].Code == transport.DigestInvalidErrorCode {
			// The registry hashed what it received: the archive's bytes
			// do not match the digest their entry names.
			return &EntryError{Entry: e.Name, Err: fmt.Errorf("%s refused its content as not matching its digest (%s): %w", repos[0], transport.DigestInvalidErrorCode, ErrCorrupt)}
		}
		return err // names the blob and the repository
	}
	p.mu.Lock()
	p.res.BlobsPushed++
	p.res.BytesPushed += e.Size
	p.mu.Unlock()
	if err := p.mountRest(e, repos); err != nil {
		return err
	}
	if p.o.afterBlob != nil {
		p.o.afterBlob()
	}
	return nil
}

// mountRest mounts one blob from repos[0], which has it, into the other
// repositories that need it: one POST each. A registry that does not
// mount (202 Accepted) gets the destination's own copy, read from
// repos[0], in the upload it started.
func (p *pusher) mountRest(e Entry, repos []name.Repository) error {
	from := repos[0]
	open := func() (io.ReadCloser, error) {
		l, err := p.puller.Layer(p.gctx, from.Digest(e.Digest.String()))
		if err != nil {
			return nil, err
		}
		return l.Compressed() // checked against its digest as it is read
	}
	for _, repo := range repos[1:] {
		if _, err := p.up.Mount(p.gctx, repo, e.Digest, e.Size, from, open); err != nil {
			return err // names the blob and both repositories
		}
	}
	p.mu.Lock()
	p.res.BlobsMounted += len(repos) - 1
	p.mu.Unlock()
	return nil
}

// manifests puts every manifest the destination lacks: related images
// first, then bundles.
func (p *pusher) manifests(ctx context.Context) error {
	if err := p.dest(); err != nil {
		return err
	}
	// Related images, bundles, then signatures: referrers by digest
	// before the tags (a referrers tag schema index names referrers).
	tagged := func(i int) bool { _, ok := p.dsts[i].(name.Tag); return ok }
	phases := []func(i int, im IndexEntry) bool{
		func(i int, im IndexEntry) bool { return im.Subject == "" && !im.Bundle },
		func(i int, im IndexEntry) bool { return im.Subject == "" && im.Bundle },
		func(i int, im IndexEntry) bool { return im.Subject != "" && !tagged(i) },
		func(i int, im IndexEntry) bool { return im.Subject != "" },
	}
	done := make([]bool, len(p.c.Images))
	for phase, in := range phases {
		if p.o.SkipPush && phase >= 2 {
			break // signatures are not required to be there
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(p.o.Jobs)
		var mu sync.Mutex
		var errs []error
		for i, im := range p.c.Images {
			if done[i] || p.dsts[i] == nil || !in(i, im) {
				continue
			}
			done[i] = true
			g.Go(func() error {
				r, err := p.image(gctx, im, p.dsts[i])
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s -> %s: %w", im.Ref, p.dsts[i], err))
					return nil
				}
				if im.Subject != "" {
					p.res.Signatures++
					if !r.Skipped {
						p.res.SignaturesPut++
					}
					return nil
				}
				p.res.Images = append(p.res.Images, *r)
				return nil
			})
		}
		_ = g.Wait()
		if len(errs) > 0 {
			sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
			return errors.Join(errs...)
		}
	}
	sort.SliceStable(p.res.Images, func(i, j int) bool {
		a, b := p.res.Images[i], p.res.Images[j]
		if a.Bundle != b.Bundle {
			return !a.Bundle
		}
		return a.Source < b.Source
	})
	return nil
}

// image puts one image's manifests (children first) and its tag.
func (p *pusher) image(ctx context.Context, im IndexEntry, dst name.Reference) (*PushedImage, error) {
	d := im.Desc.Digest.String()
	r := &PushedImage{Source: im.Ref, Destination: dst.String(), Digest: d, Bundle: im.Bundle, Catalog: im.Catalog}
	if present, ok := p.knownHead(ctx, im, dst); ok && present {
		r.Skipped = true
		return r, nil
	} else if ok {
		return r, p.put(ctx, dst, d) // missing when the archive was read
	}
	if head, err := p.puller.Head(ctx, dst); err == nil && head.Digest == im.Desc.Digest {
		r.Skipped = true
		return r, nil
	} else if err == nil && im.Subject != "" && isReferrersTag(dst) {
		// The site lists referrers of its own (publish's summaries and
		// signatures): keep them beside the archive's.
		skipped, err := p.mergeReferrersTag(ctx, dst.(name.Tag), d)
		r.Skipped = skipped
		return r, err
	} else if p.o.SkipPush {
		if err == nil {
			return nil, fmt.Errorf("--skip-push: the destination has digest %s, the archive %s: push the images first", head.Digest, d)
		}
		return nil, fmt.Errorf("--skip-push: not at the destination (%v): push the images first", err)
	}
	// A tagged image is put by its tag only (the registry keeps it by
	// digest too): one request instead of a HEAD and two PUTs.
	if err := p.put(ctx, dst, d); err != nil {
		return nil, err
	}
	return r, nil
}

// put puts manifest d (and, for an index, its children first, by digest)
// at ref: a tag, or a digest (skipped when the registry has it).
func (p *pusher) put(ctx context.Context, ref name.Reference, d string) error {
	m := p.c.Manifests[d]
	if m == nil {
		return fmt.Errorf("manifest %s is not in the archive", d)
	}
	repo := ref.Context()
	if _, tagged := ref.(name.Tag); !tagged {
		ref = repo.Digest(d)
		if _, err := p.puller.Head(ctx, ref); err == nil {
			return nil
		}
	}
	if m.MediaType.IsIndex() {
		for _, ch := range m.Children {
			if ch.MediaType.IsIndex() || ch.MediaType.IsImage() {
				if err := p.put(ctx, repo.Digest(ch.Digest.String()), ch.Digest.String()); err != nil {
					return err
				}
			}
		}
	}
	return p.rp.Put(ctx, ref, rawManifest{m.Raw, m.MediaType})
}
