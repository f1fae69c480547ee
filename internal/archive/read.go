package archive

import (
	"archive/tar"
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/klauspost/compress/gzip"
)

// EntryKind says what an archive entry is.
type EntryKind int

// Entry kinds, by path: oci-layout, index.json, packages/…/*.yaml,
// blobs/sha256/<hex>, digests.json (DigestsFile).
const (
	EntryLayout EntryKind = iota
	EntryIndex
	EntryPackage
	EntryBlob
	EntryDigests
	// EntryTrust is a file of the trust material under trust/ (*.json,
	// *.pub): the verify policy's keys and trusted roots (TrustDir).
	EntryTrust
)

// Entry is one regular file of an archive.
type Entry struct {
	Name   string
	Kind   EntryKind
	Size   int64   // bytes, from the tar header
	Digest v1.Hash // blobs only: the digest the path names
}

// EntryError is a problem with one entry of an archive (or with the archive
// as a whole when Entry is ""): a path that is not allowed, a link, a
// duplicate, a size over the limits, content that does not match its
// digest, a truncated or corrupt stream.
type EntryError struct {
	Entry string
	Err   error
}

func (e *EntryError) Error() string {
	if e.Entry == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("entry %s: %v", e.Entry, e.Err)
}
func (e *EntryError) Unwrap() error { return e.Err }

// RegistryError is a failure of the destination registry during a push
// (not a problem of the archive): retry, or fix credentials or network.
type RegistryError struct{ Err error }

func (e *RegistryError) Error() string { return e.Err.Error() }
func (e *RegistryError) Unwrap() error { return e.Err }

// ErrCorrupt is wrapped by every error that says the archive's bytes are
// damaged (truncated, bad gzip or tar stream, wrong digest): copy it again.
var ErrCorrupt = errors.New("the archive is damaged: copy it again (and compare its .sha256)")

// DigestError says an entry's content does not hash to the digest its name
// gives (sha256, hex).
type DigestError struct{ Got, Want string }

func (e *DigestError) Error() string {
	return fmt.Sprintf("content has digest sha256:%s, not the sha256:%s its name says", e.Got, e.Want)
}

// ErrWrittenDamaged replaces ErrCorrupt after a DigestError when the whole
// file still matches its FILE.sha256: the archive was not damaged on the
// way, it was written from a damaged blob (one trusted from a damaged
// --cache, say), so copying it again cannot help.
var ErrWrittenDamaged = errors.New("the archive matches its .sha256, so it was written with this damage, not damaged on the way: package it again (with --verify-cache if it was made with --cache)")

// Walk reads a gzip-compressed tar from r and calls visit for every regular
// file, in archive order, after checking it: the path must be oci-layout,
// index.json, digests.json, blobs/sha256/<64 hex digits> or a .yaml file below packages/
// (relative, clean, no "..", no backslash); links, devices, FIFOs and any
// other entry type are refused; a path may appear once; sizes stay within
// lim (per entry, and in total as decompressed); directories are skipped.
//
// body yields exactly the entry's bytes; for a blob it fails at the end when
// the content does not hash to the digest its path names. visit may read
// body partly or not at all: Walk reads (and, for a blob, verifies) the
// rest. Errors are *EntryError naming the entry; truncated, corrupt and
// mismatching content, and bytes after the gzip stream, wrap ErrCorrupt.
func Walk(r io.Reader, lim Limits, visit func(e Entry, body io.Reader) error) error {
	lim = lim.withDefaults()
	br := bufio.NewReaderSize(r, 1<<20)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return &EntryError{Err: fmt.Errorf("not a gzip-compressed archive (%v): %w", err, ErrCorrupt)}
	}
	zr.Multistream(false)
	counted := &limitCounter{r: zr, max: lim.Total}
	tr := tar.NewReader(counted)
	seen := map[string]bool{}
	last := ""
	for n := 0; ; n++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return streamErr(last, counted, err)
		}
		if n >= lim.Entries {
			return &EntryError{Entry: h.Name, Err: fmt.Errorf("more than %d entries", lim.Entries)}
		}
		e, skip, err := check(h, lim)
		if err != nil {
			return &EntryError{Entry: h.Name, Err: err}
		}
		if skip {
			continue
		}
		if seen[e.Name] {
			return &EntryError{Entry: h.Name, Err: errors.New("duplicate entry: an archive names each file once")}
		}
		seen[e.Name] = true
		last = e.Name
		body := &entryReader{r: tr, name: e.Name}
		if e.Kind == EntryBlob {
			body.h, body.want = sha256.New(), e.Digest.Hex
		}
		if err := visit(e, body); err != nil {
			if body.err != nil {
				return streamErr(e.Name, counted, body.err)
			}
			var ee *EntryError
			var re *RegistryError
			var me *MapError
			if errors.As(err, &ee) || errors.As(err, &re) || errors.As(err, &me) {
				return err
			}
			return &EntryError{Entry: e.Name, Err: err}
		}
		if _, err := io.Copy(io.Discard, body); err != nil {
			return streamErr(e.Name, counted, err)
		}
	}
	// The gzip trailer (CRC and size) is checked on reading to its end.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return streamErr("", counted, err)
	}
	// Nothing may follow the one gzip member: bytes there (another member,
	// a payload) are not part of what was verified, and another reader
	// (gzip -d, tar xzf reads every member) would see them.
	if _, err := br.ReadByte(); err != io.EOF {
		if err == nil {
			err = errors.New("bytes after the end of the gzip stream: an archive is one gzip stream and nothing else")
		}
		return &EntryError{Err: fmt.Errorf("%w: %w", err, ErrCorrupt)}
	}
	return nil
}

// check validates one tar header and classifies it. skip: a directory.
func check(h *tar.Header, lim Limits) (Entry, bool, error) {
	name := h.Name
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeDir:
	case tar.TypeSymlink, tar.TypeLink:
		return Entry{}, false, fmt.Errorf("a link (to %q) is not allowed in an archive", h.Linkname)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return Entry{}, false, errors.New("a device file or FIFO is not allowed in an archive")
	default:
		return Entry{}, false, fmt.Errorf("entry type %q is not allowed in an archive (regular files only)", h.Typeflag)
	}
	if len(name) > maxNameBytes || name == "" || strings.ContainsAny(name, "\\\x00") {
		return Entry{}, false, errors.New("invalid path")
	}
	if strings.HasPrefix(name, "/") || (len(name) > 1 && name[1] == ':') {
		return Entry{}, false, errors.New("absolute path not allowed")
	}
	trimmed := strings.TrimSuffix(name, "/")
	for _, c := range strings.Split(trimmed, "/") {
		if c == ".." {
			return Entry{}, false, errors.New("path traversal (..) not allowed")
		}
	}
	clean := path.Clean(trimmed)
	if clean != strings.TrimPrefix(trimmed, "./") || clean == "." {
		return Entry{}, false, errors.New("path is not clean (//, ./): not allowed")
	}
	if h.Typeflag == tar.TypeDir {
		if clean == "blobs" || clean == "blobs/sha256" || clean == "packages" || strings.HasPrefix(clean, PackagesDir) || clean+"/" == TrustDir || strings.HasPrefix(clean, TrustDir) {
			return Entry{}, true, nil
		}
		return Entry{}, false, errors.New("unexpected directory (an archive holds oci-layout, index.json, digests.json, blobs/sha256/, packages/ and trust/)")
	}
	if h.Size < 0 {
		return Entry{}, false, errors.New("negative size")
	}
	e := Entry{Name: clean, Size: h.Size}
	switch {
	case clean == LayoutFile:
		e.Kind = EntryLayout
	case clean == IndexFile:
		e.Kind = EntryIndex
	case clean == DigestsFile:
		e.Kind = EntryDigests
		if h.Size > maxDigestsBytes {
			return Entry{}, false, fmt.Errorf("%d bytes: larger than the limit of %d bytes for the digest list", h.Size, maxDigestsBytes)
		}
		return e, false, nil
	case strings.HasPrefix(clean, BlobsDir):
		hexPart := strings.TrimPrefix(clean, BlobsDir)
		if _, err := hex.DecodeString(hexPart); err != nil || len(hexPart) != 64 || strings.ToLower(hexPart) != hexPart {
			return Entry{}, false, errors.New("blob name is not a sha256 digest (64 lowercase hex digits)")
		}
		e.Kind, e.Digest = EntryBlob, v1.Hash{Algorithm: "sha256", Hex: hexPart}
		if h.Size > lim.Blob {
			return Entry{}, false, fmt.Errorf("%d bytes: larger than the limit of %d bytes for one blob", h.Size, lim.Blob)
		}
		return e, false, nil
	case strings.HasPrefix(clean, PackagesDir) && strings.HasSuffix(clean, ".yaml"):
		e.Kind = EntryPackage
	case strings.HasPrefix(clean, TrustDir) && (strings.HasSuffix(clean, ".json") || strings.HasSuffix(clean, ".pub")):
		e.Kind = EntryTrust
	default:
		return Entry{}, false, errors.New("unexpected file (an archive holds oci-layout, index.json, digests.json, blobs/sha256/<digest>, packages/…/*.yaml and trust/…/*.json or *.pub)")
	}
	if h.Size > lim.Manifest {
		return Entry{}, false, fmt.Errorf("%d bytes: larger than the limit of %d bytes for a metadata file", h.Size, lim.Manifest)
	}
	return e, false, nil
}

// streamErr describes a failure of the gzip or tar stream inside entry.
func streamErr(entry string, c *limitCounter, err error) error {
	var ee *EntryError
	if errors.As(err, &ee) {
		return err
	}
	if c.over {
		return &EntryError{Entry: entry, Err: fmt.Errorf("the archive expands to more than %d bytes: refused", c.max)}
	}
	where := entry
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		if where == "" {
			return &EntryError{Err: fmt.Errorf("the archive is truncated: %w", ErrCorrupt)}
		}
		return &EntryError{Entry: where, Err: fmt.Errorf("truncated: the archive ends inside this entry: %w", ErrCorrupt)}
	case errors.Is(err, ErrCorrupt):
		return &EntryError{Entry: where, Err: err}
	}
	if where == "" {
		return &EntryError{Err: fmt.Errorf("corrupt stream (%v): %w", err, ErrCorrupt)}
	}
	return &EntryError{Entry: where, Err: fmt.Errorf("corrupt stream after this entry began (%v): %w", err, ErrCorrupt)}
}

// entryReader reads one entry and, for a blob, checks its digest at the end
// (unless the reader's consumer leaves that check to the registry that
// receives the bytes: receiverChecks).
type entryReader struct {
	r    io.Reader
	name string
	h    hash.Hash
	want string
	done bool
	err  error // the stream failed (not the digest check)
}

// receiverChecks turns off the digest check of a blob entry not read yet:
// for a blob push streams to a registry, which must compare what it
// receives with the digest of the upload and refuse it otherwise (the OCI
// distribution spec's DIGEST_INVALID; upload turns that into an
// EntryError), so that the client does not hash every byte a second time.
// The gzip stream's CRC-32 still covers every byte of the archive.
func receiverChecks(body io.Reader) {
	if e, ok := body.(*entryReader); ok && !e.done {
		e.h = nil
	}
}

func (e *entryReader) Read(p []byte) (int, error) {
	if e.done {
		return 0, io.EOF
	}
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	if e.h != nil && n > 0 {
		e.h.Write(p[:n])
	}
	if err == io.EOF {
		e.done = true
		if e.h != nil {
			if got := hex.EncodeToString(e.h.Sum(nil)); got != e.want {
				return n, &EntryError{Entry: e.name, Err: fmt.Errorf("%w: %w", &DigestError{Got: got, Want: e.want}, ErrCorrupt)}
			}
		}
	}
	return n, err
}

// limitCounter fails once more than max bytes were read.
type limitCounter struct {
	r    io.Reader
	n    int64
	max  int64
	over bool
}

func (c *limitCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		c.over = true
		return n, fmt.Errorf("the archive expands to more than %d bytes", c.max)
	}
	return n, err
}
