package archive

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/klauspost/compress/gzip"
)

// finishIndex leaves out of idx (and of what is stored) what o.Base holds,
// sorts the files, manifests and blobs to write, and encodes index.json
// and digests.json.
func (pp *prepared) finishIndex(idx v1.IndexManifest) error {
	c, o, res := pp.c, pp.o, pp.res
	if o.Base != nil {
		idx.Manifests, res.Images, res.BaseLeftOut = o.Base.leaveOut(idx.Manifests, res.Images)
	}
	// What the kept entries need: their manifests, and their configs and
	// layers the base does not hold.
	list := c.digestList(idx.Manifests)
	mans, blobs := c.reachable(idx.Manifests)
	if o.Base != nil {
		for d := range blobs {
			if o.Base.hasBlob(d) {
				delete(blobs, d)
			}
		}
		for i, b := range list.Blobs {
			_, stored := blobs[b.Digest]
			list.Blobs[i].Base = !stored
		}
		list = o.Base.extend(list)
		if idx.Annotations == nil {
			idx.Annotations = map[string]string{}
		}
		idx.Annotations[AnnotationBase] = o.Base.name()
	}
	indexJSON, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	digestsJSON, err := json.Marshal(list)
	if err != nil {
		return err
	}
	pp.indexJSON, pp.digestsJSON, res.digests = indexJSON, digestsJSON, digestsJSON
	pp.files = append([]File(nil), o.Files...)
	sort.Slice(pp.files, func(i, j int) bool { return pp.files[i].Path < pp.files[j].Path })
	for i, f := range pp.files {
		if i > 0 && pp.files[i-1].Path == f.Path {
			return fmt.Errorf("package file %s given twice", f.Path)
		}
		if _, _, err := check(&tar.Header{Name: PackagesDir + f.Path, Typeflag: tar.TypeReg, Size: int64(len(f.Data))}, Limits{}.withDefaults()); err != nil {
			return fmt.Errorf("package file %s: %w", f.Path, err)
		}
	}
	pp.trust = append([]File(nil), o.Trust...)
	sort.Slice(pp.trust, func(i, j int) bool { return pp.trust[i].Path < pp.trust[j].Path })
	for _, f := range pp.trust {
		if _, _, err := check(&tar.Header{Name: TrustDir + f.Path, Typeflag: tar.TypeReg, Size: int64(len(f.Data))}, Limits{}.withDefaults()); err != nil {
			return fmt.Errorf("trust file %s: %w", f.Path, err)
		}
	}
	// Parents before children (a reader learns from the parent that a blob
	// is a manifest), by digest within one depth.
	pp.mans = sortedKeys(mans)
	sort.SliceStable(pp.mans, func(i, j int) bool { return c.depth[pp.mans[i]] < c.depth[pp.mans[j]] })
	res.Manifests = len(pp.mans)
	for d := range blobs {
		if _, ok := c.manifests[d]; !ok {
			pp.blobs = append(pp.blobs, d)
			res.BlobBytes += c.blobs[d].desc.Size
		}
	}
	sort.Strings(pp.blobs)
	res.Blobs = len(pp.blobs)
	return nil
}

// done fills the result's cache counters once every stream is written.
func (pp *prepared) done() {
	pp.res.CacheErr = pp.o.Cache.Err()
	if pp.res.CacheErr == nil {
		pp.res.CacheErr = pp.c.cacheErr
	}
}

// nopWriteCloser closes nothing: the gzip writer of an uncompressed
// archive.
type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }

// write writes one gzip-compressed tar (a plain one with Uncompressed) to w: with head, the metadata
// (oci-layout, index.json, digests.json, packages/…, every manifest)
// first; then the configs and layers blobs, in that order. It returns the
// bytes written and their sha256 (hex).
func (pp *prepared) write(ctx context.Context, w io.Writer, head bool, blobs []string) (int64, string, error) {
	// The archive is hashed in a goroutine of its own (writing it there
	// too was measured: no faster), waited for whatever happens.
	sum := newAsyncHash()
	hashed := false
	defer func() {
		if !hashed {
			sum.Sum()
		}
	}()
	cw := &countWriter{w: io.MultiWriter(w, sum)}
	bw := bufio.NewWriterSize(cw, 1<<20)
	var zw io.WriteCloser = nopWriteCloser{}
	tw := tar.NewWriter(bw)
	if !pp.o.Uncompressed {
		gz, err := gzip.NewWriterLevel(bw, pp.o.Level)
		if err != nil {
			return 0, "", err
		}
		zw, tw = gz, tar.NewWriter(gz)
	}
	if head {
		if err := pp.writeHead(tw); err != nil {
			return 0, "", err
		}
	}
	if err := pp.writeBlobs(ctx, tw, blobs); err != nil {
		return 0, "", err
	}
	if err := tw.Close(); err != nil {
		return 0, "", err
	}
	if err := zw.Close(); err != nil {
		return 0, "", err
	}
	if err := bw.Flush(); err != nil {
		return 0, "", err
	}
	hashed = true
	return cw.n, hex.EncodeToString(sum.Sum()), nil
}

// writeHead writes the metadata entries of an archive (or of its first
// part).
func (pp *prepared) writeHead(tw *tar.Writer) error {
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(header(name, int64(len(data)))); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := put(LayoutFile, []byte(layoutData)); err != nil {
		return err
	}
	if err := put(IndexFile, pp.indexJSON); err != nil {
		return err
	}
	if err := put(DigestsFile, pp.digestsJSON); err != nil {
		return err
	}
	for _, f := range pp.files {
		if err := put(PackagesDir+f.Path, f.Data); err != nil {
			return err
		}
	}
	for _, f := range pp.trust {
		if err := put(TrustDir+f.Path, f.Data); err != nil {
			return err
		}
	}
	for _, d := range pp.mans {
		if err := put(BlobsDir+strings.TrimPrefix(d, "sha256:"), pp.c.manifests[d]); err != nil {
			return err
		}
	}
	return nil
}

// writeBlobs streams blobs (digests) from the registries or the cache
// into tw. The next blobs' requests are opened ahead (prefetch of them),
// so the registry reads them while this one is written; their bytes wait
// in the sockets' buffers, not in memory here.
func (pp *prepared) writeBlobs(ctx context.Context, tw *tar.Writer, blobs []string) error {
	c, res := pp.c, pp.res
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opened := make([]chan openBlob, len(blobs))
	open := func(i int) {
		opened[i] = make(chan openBlob, 1)
		go func() { opened[i] <- c.open(bctx, c.blobs[blobs[i]]) }()
	}
	for i := range min(prefetch, len(blobs)) {
		open(i)
	}
	defer func() {
		// On error, stop what was opened ahead and close it once its open
		// returns (quickly: requests and hashing stop with bctx), so that
		// no request or temporary file of the cache outlives Package (the
		// CLI exits right after it).
		cancel()
		for _, ch := range opened {
			if ch != nil {
				ob := <-ch
				ob.close()
			}
		}
	}()
	for i, d := range blobs {
		if j := i + prefetch; j < len(blobs) {
			open(j)
		}
		ob := <-opened[i]
		opened[i] = nil
		added, cerr, err := copyBlob(tw, c.blobs[d], ob, pp.o)
		c.cacheFailed(cerr)
		if err != nil {
			return err
		}
		if added {
			res.CacheAdded++
		}
		if ob.damaged {
			res.CacheDamaged++
		}
		if ob.cached {
			res.CachedBlobs++
			res.CachedBytes += c.blobs[d].desc.Size
		}
	}
	return nil
}

// open opens one blob to copy: built here (an OCI catalog's), from the
// cache (hashed here, ahead of the copy, on the other core: a damaged one
// is read from the registry), or from its registry.
func (c *collected) open(ctx context.Context, b blobInfo) openBlob {
	if b.open != nil {
		rc, err := b.open()
		return openBlob{rc: rc, err: err}
	}
	f, ok, damaged := c.cache.checkedBlob(ctx, b.desc)
	if ok {
		return openBlob{rc: f, cached: true}
	}
	l, err := c.puller.Layer(ctx, b.repo.Digest(b.desc.Digest.String()))
	if err != nil {
		return openBlob{err: err}
	}
	rc, err := l.Compressed()
	if err != nil {
		return openBlob{err: err}
	}
	bw, err := c.cache.newBlob(b.desc)
	c.cacheFailed(err)
	return openBlob{rc: rc, cache: bw, damaged: damaged}
}
