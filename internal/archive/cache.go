package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Cache is a local OCI image layout (image-spec v1.1 "image-layout.md":
// oci-layout, index.json, blobs/sha256/<hex>) that Package uses as a
// content-addressed store: manifests and blobs read from a registry are
// written into it, and the next Package takes them from the disk instead of
// the registry. Manifests named by digest (pinned related images, the
// children of an image index) then need no request at all; tags are still
// resolved at the registry, since a tag can move.
//
// Any OCI image layout will do, `crane pull --format oci` or `skopeo copy
// oci:` output included: only its blobs/sha256 is read, and index.json is
// never rewritten. Every file is written to a temporary name and renamed
// once its digest checked out, so concurrent runs can share one cache and
// an interrupted run leaves no wrong blob.
//
// Like containerd's content store, the cache trusts what it holds: a cached
// blob that is a regular file of the right size goes into the archive
// without being hashed again (the archive's consumers, `publish push` and
// `publish verify`, check every digest); a symbolic link is used only when
// what it leads to hashes right. With Verify set, each cached blob is
// hashed first, and one whose digest is wrong is removed and read from the
// registry instead. Cached manifests are small and always checked. A cache
// that cannot be written is read as it is (PackageResult.CacheErr says why
// nothing was added).
//
// The cache only grows: remove the directory (or files under
// blobs/sha256 not touched for a while) to prune it. Temporary files
// (.partial-*) left by a killed run are never read, and OpenCache removes
// those not written for a day.
type Cache struct {
	dir string
	// Verify hashes every cached blob before it is used.
	Verify bool

	err error // why OpenCache could not write the layout (Err)
}

// cacheTempPrefix starts the names of files being written into the cache.
const cacheTempPrefix = ".partial-"

// OpenCache opens (creating it when missing) the OCI image layout at dir.
// Errors: dir is not a directory (or lies under a file), or holds an
// oci-layout that is not the marker of layout version 1.0.0. A cache that
// cannot be written (read-only, say) is no error: it is read as it is,
// nothing is added to it, and Err says why.
func OpenCache(dir string) (*Cache, error) {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("cache %s is not a directory: give a directory (created when missing) or an OCI image layout", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cache %s: %w", dir, err) // under a file: ENOTDIR
	}
	c := &Cache{dir: dir}
	marker := filepath.Join(dir, LayoutFile)
	data, err := readMarker(marker)
	if errors.Is(err, os.ErrNotExist) {
		// A new cache goes only into a new or empty directory: --cache .
		// must not fill a checkout with blobs.
		if entries, rerr := os.ReadDir(dir); rerr == nil {
			for _, e := range entries {
				if !strings.HasPrefix(e.Name(), cacheTempPrefix) {
					return nil, fmt.Errorf("cache %s is neither empty nor an OCI image layout (it has %s, and no %s): give a new or empty directory, or an OCI image layout", dir, e.Name(), LayoutFile)
				}
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		c.err = fmt.Errorf("cache %s: %w", dir, err)
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		if c.err == nil {
			c.err = c.writeFile(marker, []byte(layoutData))
		}
	case err != nil:
		return nil, fmt.Errorf("cache %s: %w", dir, err)
	default:
		// The file's content is not quoted: it may be anything a link
		// leads to (a docker config.json with credentials, say).
		var l struct {
			Version any `json:"imageLayoutVersion"`
		}
		what := "not JSON"
		if json.Unmarshal(data, &l) == nil {
			what = fmt.Sprintf("imageLayoutVersion %.40v", l.Version)
			if l.Version == nil {
				what = "no imageLayoutVersion"
			}
		}
		if l.Version != "1.0.0" {
			return nil, fmt.Errorf("cache %s: %s is not an OCI image layout 1.0.0 marker (%s): use an empty directory or an OCI image layout", dir, marker, what)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, IndexFile)); errors.Is(err, os.ErrNotExist) && c.err == nil {
		empty := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`
		c.err = c.writeFile(filepath.Join(dir, IndexFile), []byte(empty))
	}
	c.removeAbandoned(time.Now().Add(-abandonedAfter))
	return c, nil
}

// abandonedAfter is how long a temporary file of the cache goes unwritten
// before it counts as left by a killed run (a blob being written is written
// to every few seconds at worst, so a running packaging is never disturbed).
const abandonedAfter = 24 * time.Hour

// removeAbandoned removes the temporary files (cacheTempPrefix) under
// blobs/sha256 last written before cutoff. Errors are ignored: they are
// only litter.
func (c *Cache) removeAbandoned(cutoff time.Time) {
	dir := filepath.Join(c.dir, "blobs", "sha256")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), cacheTempPrefix) || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// readMarker reads the oci-layout file p: a regular file (a FIFO would
// block, a device never end) of at most 4 KiB.
func readMarker(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() || st.Size() > 4<<10 {
		return nil, fmt.Errorf("%s is not an OCI image layout marker (not a regular file of at most 4 KiB): use an empty directory or an OCI image layout", p)
	}
	return io.ReadAll(io.LimitReader(f, 4<<10))
}

// Err is why OpenCache could not write the layout (nil: it could): such
// a cache is read as it is, and nothing is added to it.
func (c *Cache) Err() error {
	if c == nil {
		return nil
	}
	return c.err
}

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.dir }

func (c *Cache) path(h v1.Hash) string {
	return filepath.Join(c.dir, "blobs", h.Algorithm, h.Hex)
}

// writeFile writes data to path through a temporary file in the same
// directory.
func (c *Cache) writeFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), cacheTempPrefix+"*")
	if err != nil {
		return fmt.Errorf("cache %s: %w", c.dir, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("cache %s: %w", c.dir, err)
	}
	return nil
}

// manifest returns the manifest with digest h from the cache, and its media
// type (its mediaType field, else guessed from its fields as OCI 1.0
// manifests may lack it). ok is false when the cache lacks it, it is larger
// than limit bytes, or its bytes do not hash to h (the file is then
// removed).
func (c *Cache) manifest(h v1.Hash, limit int64) (raw []byte, mt types.MediaType, ok bool) {
	if c == nil || h.Algorithm != "sha256" {
		return nil, "", false
	}
	// A symbolic link is followed (the bytes are hashed), but only to a
	// regular file of at most limit bytes: not a FIFO or a device.
	f, err := os.OpenFile(c.path(h), os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return nil, "", false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > limit {
		return nil, "", false
	}
	raw, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil || int64(len(raw)) > limit {
		return nil, "", false
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != h.Hex {
		os.Remove(c.path(h))
		return nil, "", false
	}
	mt = sniffMediaType(raw)
	return raw, mt, mt != ""
}

// putManifest stores a manifest that was read (and checked) from a
// registry, unless the cache holds these very bytes already: anything else
// there (damaged, too large, truncated, a FIFO) was not used, and is
// replaced. Manifests are small: comparing costs one short read. An error
// only means that it was not stored: a cache that cannot be written only
// costs requests.
func (c *Cache) putManifest(h v1.Hash, raw []byte) error {
	if c == nil || h.Algorithm != "sha256" {
		return nil
	}
	if f, err := os.OpenFile(c.path(h), os.O_RDONLY|openNonBlock|openNoFollow, 0); err == nil {
		st, err := f.Stat()
		same := false
		if err == nil && st.Mode().IsRegular() && st.Size() == int64(len(raw)) {
			have, err := io.ReadAll(io.LimitReader(f, int64(len(raw))))
			same = err == nil && bytes.Equal(have, raw)
		}
		f.Close()
		if same {
			return nil
		}
	}
	return c.writeFile(c.path(h), raw)
}

// sniffMediaType is the media type of a cached manifest: its mediaType
// field when that names an image manifest or index (as the registry's
// Content-Type is replaced by it, see manifestMediaType), else, when the
// field is absent, an OCI index when it has "manifests", an OCI image
// manifest when it has "config" and "layers" (image-spec v1.0 made the
// field optional); "" otherwise (read from the registry).
func sniffMediaType(raw []byte) types.MediaType {
	var m struct {
		MediaType types.MediaType `json:"mediaType"`
		Manifests json.RawMessage `json:"manifests"`
		Config    json.RawMessage `json:"config"`
		Layers    json.RawMessage `json:"layers"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return ""
	}
	switch {
	case m.MediaType.IsImage() || m.MediaType.IsIndex():
		return m.MediaType
	case m.MediaType != "":
		return ""
	case m.Manifests != nil:
		return types.OCIImageIndex
	case m.Config != nil && m.Layers != nil:
		return types.OCIManifestSchema1
	}
	return ""
}

// manifestMediaType is the media type of manifest raw, served by a
// registry as served (its Content-Type): the manifest's mediaType field
// when that names an image manifest or index, else served. The field is
// part of the digested bytes, so the cache, which keeps only the bytes,
// gets the same type (a registry may serve whatever Content-Type it was
// given at push).
func manifestMediaType(raw []byte, served types.MediaType) types.MediaType {
	var m struct {
		MediaType types.MediaType `json:"mediaType"`
	}
	if json.Unmarshal(raw, &m) == nil && (m.MediaType.IsImage() || m.MediaType.IsIndex()) {
		return m.MediaType
	}
	return served
}

// checkedBlob opens the cached blob d: ok is false when the cache lacks it
// or it has the wrong size, or (with Verify) the wrong digest. A file of
// the wrong digest is removed; one of the wrong size is left for the
// registry's copy to replace (a manifest may lie about the size).
// damaged says a file of the wrong digest was found (and removed).
//
// Only a regular file of the cache itself is trusted without hashing: a
// symbolic link (it may lead anywhere, /etc/passwd say) is used only when
// what it leads to has the blob's digest, as with Verify; a FIFO, device
// or directory is never read. The default path costs one open and one
// fstat; ctx stops the hashing.
func (c *Cache) checkedBlob(ctx context.Context, d v1.Descriptor) (f *os.File, ok, damaged bool) {
	if c == nil || d.Digest.Algorithm != "sha256" {
		return nil, false, false
	}
	p := c.path(d.Digest)
	verify := c.Verify
	f, err := os.OpenFile(p, os.O_RDONLY|openNonBlock|openNoFollow, 0)
	if err != nil {
		// O_NOFOLLOW refused a symbolic link (ELOOP): follow it, and hash.
		if st, lerr := os.Lstat(p); lerr != nil || st.Mode()&os.ModeSymlink == 0 {
			return nil, false, false
		}
		if f, err = os.OpenFile(p, os.O_RDONLY|openNonBlock, 0); err != nil {
			return nil, false, false // dangling: the registry's copy replaces the link
		}
		verify = true
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() != d.Size {
		f.Close()
		if err == nil && !st.Mode().IsRegular() {
			os.Remove(p) // a link, not its target; a directory only when empty
		}
		// A regular file stays: the registry's copy replaces it (rename),
		// and the descriptor's size may be the wrong one.
		return nil, false, false
	}
	if !verify {
		return f, true, false
	}
	h := sha256.New()
	n, err := io.Copy(h, ctxReader{ctx, io.LimitReader(f, d.Size+1)})
	if err == nil && n == d.Size && hex.EncodeToString(h.Sum(nil)) == d.Digest.Hex {
		if _, err = f.Seek(0, io.SeekStart); err == nil {
			return f, true, false
		}
	}
	f.Close()
	if err == nil {
		os.Remove(p)
		return nil, false, true
	}
	return nil, false, false
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// blobWriter receives a blob read from a registry and adds it to the cache
// once the whole blob was read and its digest checked (by the registry
// reader: no second hash here).
type blobWriter struct {
	c    *Cache
	d    v1.Descriptor
	f    *os.File
	n    int64
	werr error
}

// newBlob starts writing blob d into the cache; nil when there is no cache
// or it cannot be written (the error says why; packaging goes on without
// it).
func (c *Cache) newBlob(d v1.Descriptor) (*blobWriter, error) {
	if c == nil || d.Digest.Algorithm != "sha256" {
		return nil, nil
	}
	f, err := os.CreateTemp(filepath.Dir(c.path(d.Digest)), cacheTempPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("cache %s: %w", c.dir, err)
	}
	return &blobWriter{c: c, d: d, f: f}, nil
}

// Write keeps the bytes; a failing disk stops the caching, not the
// packaging.
func (w *blobWriter) Write(p []byte) (int, error) {
	if w.werr == nil {
		if _, err := w.f.Write(p); err != nil {
			w.werr = err
		} else {
			w.n += int64(len(p))
		}
	}
	return len(p), nil
}

// done renames the blob into place when verified is true (the registry
// reader checked its digest at the end) and every byte was written;
// otherwise the temporary file is removed. added says whether the blob is
// now in the cache; err, why a verified blob is not (a write error).
func (w *blobWriter) done(verified bool) (added bool, err error) {
	if w == nil {
		return false, nil
	}
	err = w.f.Close()
	if err == nil {
		err = w.werr
	}
	if verified && err == nil && w.n != w.d.Size {
		err = fmt.Errorf("%s: %d bytes written, want %d", w.d.Digest, w.n, w.d.Size)
	}
	if verified && err == nil {
		if err = os.Chmod(w.f.Name(), 0o644); err == nil {
			if err = os.Rename(w.f.Name(), w.c.path(w.d.Digest)); err == nil {
				return true, nil
			}
		}
	}
	os.Remove(w.f.Name())
	if !verified {
		return false, nil
	}
	return false, fmt.Errorf("cache %s: %w", w.c.dir, err)
}
