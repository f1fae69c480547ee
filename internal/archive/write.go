package archive

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/operator-publish/publish/internal/scratch"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
	"golang.org/x/sync/errgroup"
)

// Image is one image to put into an archive.
type Image struct {
	// Ref is the source reference (tag or digest).
	Ref string
	// Bundle marks a bundle image (pushed after every related image).
	Bundle bool
	// Tag is the tag the image carries at the destination when Ref is
	// pinned by digest only ("" otherwise): a bundle's ArtifactVersion tag.
	Tag string
	// Artifacts are the artifacts whose versions need the image
	// (AnnotationArtifacts); none: the entry names no artifact.
	Artifacts []string
	// Platforms reduces an image index to these platforms (os/arch[/variant];
	// a platform without variant matches every variant). Nil: the index
	// whole, with its original digest.
	Platforms []string
	// Built, when set, is the image itself, made here and read from no
	// registry (a classic repository's chart as the OCI artifact `helm
	// push` makes of it: kind.ChartImage); Ref still names it, and no
	// signature is looked for at a source.
	Built v1.Image
}

// Catalog is an OCI catalog to put into an archive: an image built here
// (ocicatalog.BuildFiles), not read from a registry.
type Catalog struct {
	// Cluster is the cluster whose rendered/<cluster> the image holds.
	Cluster string
	Image   v1.Image
	// Locations are the REGISTRY/REPOSITORY its Artifacts name unchanged
	// from the catalog's state (AnnotationCatalogLocations).
	Locations []string
}

// File is a file stored under packages/ (a PackageManifest).
type File struct {
	Path string // relative to packages/, slash-separated, ending in .yaml
	Data []byte
}

// PackageOptions configures Package.
type PackageOptions struct {
	Images []Image
	Files  []File
	// Trust are files written under trust/ (TrustDir), paths relative to
	// it, *.json or *.pub: the verify policy's trust material, for push
	// and verify on the far side.
	Trust []File
	// Catalogs are the OCI catalogs to carry (KindCatalog entries of
	// index.json, named CatalogRef(cluster)); one per cluster.
	Catalogs []Catalog
	// Parse parses a reference (plain HTTP, say); nil: name.ParseReference.
	Parse func(string) (name.Reference, error)
	// Read parses a reference and returns where the image is read (a
	// source mirror's copy: registry.Client.ReadReference); nil: Parse.
	// The archive names every image, and its signatures, as Parse does.
	Read func(string) (name.Reference, error)
	// Remote are the options for reading the source registries (auth,
	// transport).
	Remote []remote.Option
	// Level is the gzip level: 0 stores, 1 (the default, see
	// DefaultLevel) is fastest, 9 smallest. Layers are already compressed,
	// so higher levels cost time for little gain.
	Level int
	// Uncompressed writes a plain tar (NAME.tar, as oc-mirror's archives
	// are) instead of a gzip-compressed one; Level is not used. Its blobs
	// lie in the file as they are, so push sends each layer from the file
	// to the connection without reading it (sendfile); the FILE.sha256 and
	// every blob's digest still check it, without gzip's CRC-32.
	Uncompressed bool
	// Concurrency bounds how many manifests are read at once (default 8).
	Concurrency int
	// Progress, when set, is told the blob bytes as they are written.
	Progress *Progress
	// Annotations go on index.json itself (AnnotationSourceCommit, say).
	Annotations map[string]string
	// Cache, when set, is read before the registries (manifests named by
	// digest, configs and layers) and receives what was read from them.
	Cache *Cache
	// Signatures carries the signatures of every image and of every
	// platform child stored, as the mirror copies them (publish run):
	// their cosign signature and attestation tags (sha256-<hex>.sig,
	// .att), their referrers tag schema index (sha256-<hex>) and the
	// referrers the OCI referrers API lists (Sigstore bundles). Each is a
	// KindSignature entry of index.json.
	// An image index reduced to Platforms has a new digest: its own
	// signatures sign a digest the archive does not have, so they are
	// left out and PackageResult.Warnings says so (its children's stay).
	Signatures bool
	// Base, when set, makes a differential archive: the index.json
	// entries the base holds (same reference, tag and digest) are left
	// out, and so are the configs and layers it holds; index.json names
	// the base (AnnotationBase) and digests.json lists what it promised.
	Base *Base
}

// DefaultLevel is the default gzip level: the fastest that compresses.
const DefaultLevel = gzip.BestSpeed

// ImageResult is one index.json entry of a written archive.
type ImageResult struct {
	Ref          string
	Digest       string // manifest digest in the archive
	SourceDigest string // digest at the source: differs when Reduced
	Reduced      bool   // an image index reduced to Platforms
	MediaType    string
	// Subject is the digest a KindSignature entry signs ("" for images).
	Subject string
}

// PackageResult says what Package wrote.
type PackageResult struct {
	Images    []ImageResult
	Manifests int   // image manifests and indexes stored
	Blobs     int   // configs and layers stored, each once
	BlobBytes int64 // their total size
	Bytes     int64 // size of the compressed archive
	SHA256    string
	// CachedBlobs and CachedBytes count the configs and layers taken from
	// PackageOptions.Cache instead of a registry.
	CachedBlobs int
	CachedBytes int64
	// CacheAdded counts the blobs read from a registry and added to the
	// cache; CacheErr is the first error writing into it (nil: none): the
	// archive is complete anyway, only what could not be written will be
	// read from the registries again.
	CacheAdded int
	CacheErr   error
	// CacheDamaged counts the cached blobs found damaged (wrong digest,
	// with Cache.Verify): they were read from a registry instead, and
	// replaced in the cache.
	CacheDamaged int
	// Signatures counts the KindSignature entries stored (signature and
	// attestation tags, referrers tag schema indexes, referrers).
	Signatures int
	// Warnings are things the caller should tell the user: signatures
	// left out of a reduced index, a referrer of a kind not stored, a
	// blob larger than a part.
	Warnings []string
	// BaseLeftOut counts the index.json entries left out because
	// PackageOptions.Base holds them.
	BaseLeftOut int
	// Parts are the parts written by WriteParts (none for one file);
	// PartsReused counts those found complete from an interrupted run.
	Parts       []Part
	PartsReused int

	digests []byte // digests.json, also written beside the archive
}

// blobInfo is a config or layer to copy, and where to read it.
type blobInfo struct {
	desc v1.Descriptor
	repo name.Repository
	from string // the image that names it, for messages
	// open, when set, reads a blob built here (an OCI catalog's) instead
	// of the registry.
	open func() (io.ReadCloser, error)
}

// collected is everything one archive holds, before writing.
type collected struct {
	mu        sync.Mutex
	puller    *remote.Puller
	cache     *Cache
	manifests map[string][]byte
	depth     map[string]int // 0: named by index.json; children one more
	blobs     map[string]blobInfo
	cacheErr  error // the first write into cache that failed
}

// cacheFailed records err (when not nil) as a failed write into the cache.
func (c *collected) cacheFailed(err error) {
	if err == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cacheErr == nil {
		c.cacheErr = err
	}
}

// Package reads every image of o.Images from its registry and writes the
// archive to w: oci-layout, index.json (one entry per image, annotated with
// its source reference), o.Files under packages/, every manifest, then every
// config and layer once (see the package doc for the order). Manifests are
// stored as the registry served them (digests preserved), except indexes
// reduced to Platforms. Blobs stream from the registry into the archive and
// are hashed on the way: memory does not grow with their size.
//
// Errors name the image (and blob) that failed; a registry error is wrapped
// as go-containerregistry returns it.
func Package(ctx context.Context, w io.Writer, o PackageOptions) (*PackageResult, error) {
	pp, err := collect(ctx, o)
	if err != nil {
		return nil, err
	}
	pp.o.Progress.Start(pp.res.BlobBytes)
	n, sum, err := pp.write(ctx, w, true, pp.blobs)
	if err != nil {
		return nil, err
	}
	pp.o.Progress.Done()
	pp.done()
	pp.res.Bytes, pp.res.SHA256 = n, sum
	return pp.res, nil
}

// collected archive, ready to be written in one stream or in parts.
type prepared struct {
	c     *collected
	o     PackageOptions
	res   *PackageResult
	files []File
	// trust is the verify policy's trust material (PackageOptions.Trust),
	// sorted by path, written under trust/ after the PackageManifests.
	trust []File
	mans  []string // manifests, parents first
	blobs []string // configs and layers, by digest
	// indexJSON and digestsJSON are index.json and digests.json.
	indexJSON, digestsJSON []byte
}

// collect reads every manifest of o (and every signature, OCI catalog),
// leaves out what o.Base holds, and returns what to write.
func collect(ctx context.Context, o PackageOptions) (*prepared, error) {
	if o.Parse == nil {
		o.Parse = func(s string) (name.Reference, error) { return name.ParseReference(s) }
	}
	if o.Read == nil {
		o.Read = o.Parse
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if !o.Uncompressed && (o.Level < gzip.HuffmanOnly || o.Level > gzip.BestCompression) {
		return nil, fmt.Errorf("gzip level %d: want 0 (store) to 9 (smallest)", o.Level)
	}
	// The puller holds a slot per open blob: room for the ones opened
	// ahead (prefetch) and the one being written.
	puller, err := remote.NewPuller(append(append([]remote.Option(nil), o.Remote...), remote.WithJobs(prefetch+2))...)
	if err != nil {
		return nil, err
	}
	c := &collected{puller: puller, cache: o.Cache, manifests: map[string][]byte{}, depth: map[string]int{}, blobs: map[string]blobInfo{}}
	res := &PackageResult{Images: make([]ImageResult, len(o.Images))}
	index := make([]v1.Descriptor, len(o.Images))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Concurrency)
	for i, im := range o.Images {
		g.Go(func() error {
			d, r, err := c.image(gctx, o, im)
			if err != nil {
				return fmt.Errorf("%s: %w", im.Ref, err)
			}
			index[i], res.Images[i] = d, r
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	entries := append([]Image(nil), o.Images...)
	if o.Signatures {
		var fromRegistries []ImageResult
		for i, r := range res.Images {
			if o.Images[i].Built == nil {
				fromRegistries = append(fromRegistries, r)
			}
		}
		sigs, err := c.signatures(ctx, o, fromRegistries)
		if err != nil {
			return nil, err
		}
		for _, s := range sigs.entries {
			entries = append(entries, Image{Ref: s.ref})
			index = append(index, s.desc)
			res.Images = append(res.Images, ImageResult{Ref: s.ref, Digest: s.desc.Digest.String(), SourceDigest: s.desc.Digest.String(), MediaType: string(s.desc.MediaType), Subject: s.subject})
		}
		res.Signatures = len(sigs.entries)
		res.Warnings = append(res.Warnings, sigs.warnings...)
	}
	clusters := map[string]bool{}
	for _, cat := range o.Catalogs {
		if clusters[cat.Cluster] {
			return nil, fmt.Errorf("OCI catalog of cluster %s given twice", cat.Cluster)
		}
		clusters[cat.Cluster] = true
		d, r, err := c.catalog(cat)
		if err != nil {
			return nil, fmt.Errorf("OCI catalog of cluster %s: %w", cat.Cluster, err)
		}
		entries = append(entries, Image{Ref: CatalogRef(cat.Cluster)})
		index, res.Images = append(index, d), append(res.Images, r)
	}
	// index.json: sorted by reference, then kind.
	order := make([]int, len(index))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return entries[order[a]].Ref < entries[order[b]].Ref })
	idx := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Annotations: o.Annotations}
	seen := map[string]bool{}
	var imgs []ImageResult
	for _, i := range order {
		key := entries[i].Ref + "\x00" + entries[i].Tag
		if seen[key] {
			continue
		}
		seen[key] = true
		idx.Manifests = append(idx.Manifests, index[i])
		imgs = append(imgs, res.Images[i])
	}
	res.Images = imgs
	pp := &prepared{c: c, o: o, res: res}
	if err := pp.finishIndex(idx); err != nil {
		return nil, err
	}
	return pp, nil
}

// header is the fixed tar header of every entry.
func header(name string, size int64) *tar.Header {
	return &tar.Header{
		Typeflag: tar.TypeReg, Name: name, Size: size, Mode: fileMode,
		ModTime: fixedTime, Uid: 0, Gid: 0, Uname: "", Gname: "",
		Format: tar.FormatPAX,
	}
}

// prefetch is how many blob requests are open ahead of the one written.
const prefetch = 4

// copyBuffers hold the 1 MiB buffers blobs are copied through (io.Copy's
// 32 KiB would mean 30 times as many read system calls for a cached blob).
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// openBlob is a blob request opened ahead (or a cached blob, checked).
type openBlob struct {
	rc     io.ReadCloser
	err    error
	cached bool        // rc is the cache's file
	cache  *blobWriter // receives a registry's bytes for the cache
	// damaged: the cache had this blob with the wrong digest (Verify).
	damaged bool
}

// close releases a blob that will not be copied.
func (ob openBlob) close() {
	if ob.rc != nil {
		ob.rc.Close()
	}
	ob.cache.done(false) // not verified: no error to report
}

// copyBlob streams one blob from its registry (or the cache) into the
// archive and checks its size and digest (ob.rc checks the digest of a
// registry's blob at its end). added says whether the blob was added to the
// cache, cacheErr why not (a failed write: packaging goes on).
func copyBlob(tw *tar.Writer, b blobInfo, ob openBlob, o PackageOptions) (added bool, cacheErr, err error) {
	what := fmt.Sprintf("%s: blob %s", b.from, b.desc.Digest)
	if ob.err != nil {
		return false, nil, fmt.Errorf("%s: %w", what, ob.err)
	}
	rc := ob.rc
	defer rc.Close()
	defer func() { added, cacheErr = ob.cache.done(err == nil) }()
	if err := tw.WriteHeader(header(BlobsDir+b.desc.Digest.Hex, b.desc.Size)); err != nil {
		return false, nil, err
	}
	// go-containerregistry's blob reader checks the digest at the end (one
	// sha256 pass, not two); a cached blob was checked when opened.
	var r io.Reader = rc
	if ob.cache != nil {
		r = io.TeeReader(rc, ob.cache)
	}
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	n, err := io.CopyBuffer(tw, io.TeeReader(r, o.Progress), *buf)
	switch {
	case errors.Is(err, tar.ErrWriteTooLong):
		return false, nil, fmt.Errorf("%s: the registry sent more than the %d bytes the manifest says", what, b.desc.Size)
	case err != nil:
		return false, nil, fmt.Errorf("%s: %w", what, err)
	case n != b.desc.Size:
		return false, nil, fmt.Errorf("%s: the registry sent %d bytes, the manifest says %d", what, n, b.desc.Size)
	}
	return false, nil, nil // added and cacheErr: set by done
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// WriteFile runs Package into path (through a temporary file in the same
// directory, renamed at the end: a failed run leaves no partial archive, and
// the .partial file of a killed one goes with the next write there) and
// writes the checksum file beside it (ChecksumPath).
func WriteFile(ctx context.Context, path string, o PackageOptions) (*PackageResult, error) {
	tmp, err := scratch.Partial(path)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 1<<20)
	res, err := Package(ctx, bw, o)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	// CreateTemp made it 0600; an archive is for carrying around.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	if err := writeChecksum(path, res.SHA256); err != nil {
		return nil, err
	}
	if err := scratch.WriteFile(DigestsPath(path), res.digests, 0o644); err != nil {
		return nil, err
	}
	return res, nil
}
