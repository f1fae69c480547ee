package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
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
	return walk(r, nil, lim, visit)
}

// walk is Walk; src, when set, is the file r reads (an uncompressed
// archive's: its entries can be sent from the file, sendFromFile).
func walk(r io.Reader, src *fileSource, lim Limits, visit func(e Entry, body io.Reader) error) error {
	lim = lim.withDefaults()
	var br *bufio.Reader
	var zr *gzip.Reader
	var counted *limitCounter
	var tr *tar.Reader
	if src != nil {
		counted = &limitCounter{r: src, max: lim.Total}
		tr = tar.NewReader(src) // a Seeker: the bytes sent from the file are skipped
	} else {
		br = bufio.NewReaderSize(r, 1<<20)
		if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
			if zr, err = gzip.NewReader(br); err != nil {
				return &EntryError{Err: fmt.Errorf("not a gzip-compressed archive (%v): %w", err, ErrCorrupt)}
			}
			zr.Multistream(false)
			counted = &limitCounter{r: zr, max: lim.Total}
		} else if !isTar(br) {
			return &EntryError{Err: fmt.Errorf("neither a gzip-compressed archive (NAME.tgz) nor a tar (NAME.tar): %w", ErrCorrupt)}
		} else {
			counted = &limitCounter{r: br, max: lim.Total}
		}
		tr = tar.NewReader(counted)
	}
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
		if src != nil {
			body.src, body.off = src, src.pos
		}
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
	if zr == nil {
		// A plain tar: what follows its end must be the zeros that pad it
		// to a record (tar -b), nothing another reader could take for
		// more of the archive.
		var rest io.Reader = br
		if src != nil {
			rest = src
		}
		if err := onlyZeros(rest); err != nil {
			return &EntryError{Err: fmt.Errorf("%w: %w", err, ErrCorrupt)}
		}
		return nil
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

// isTar says whether br starts with a tar header: the ustar magic of
// POSIX (and GNU) tar at offset 257 (what publish package and tar write).
func isTar(br *bufio.Reader) bool {
	b, err := br.Peek(512)
	if err != nil {
		return false
	}
	return bytes.Equal(b[257:262], []byte("ustar"))
}

// onlyZeros reads r to its end and fails on a byte that is not zero.
func onlyZeros(r io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		for _, c := range buf[:n] {
			if c != 0 {
				return errors.New("bytes after the end of the tar: an archive is one tar and nothing else")
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
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
	// src and off: the file of an uncompressed archive and where the
	// entry's bytes start in it (nil: read through a stream).
	src  *fileSource
	off  int64
	read bool // a byte was read
}

// sendFromFile, for a blob entry of an uncompressed archive read from its
// file and not read yet, returns the file and the offset of its bytes and
// has the walk skip them (seek over them, with no digest check): the
// caller sends them from the file itself (an upload by sendfile), to a
// registry that checks the digest (receiverChecks). ok is false for any
// other body, which the caller reads as before.
func sendFromFile(body io.Reader) (path string, off int64, ok bool) {
	e, isEntry := body.(*entryReader)
	if !isEntry || e.src == nil || e.read || e.done || e.h == nil {
		return "", 0, false
	}
	e.done, e.h = true, nil
	return e.src.path, e.off, true
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
	e.read = e.read || n > 0
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

// fileSource reads an uncompressed archive from its file for walk: through
// a buffer, counting the position (where each entry's bytes start),
// telling progress what it reads or skips, and seeking over the bytes of
// the entries sent from the file (sendFromFile).
type fileSource struct {
	f        *os.File
	path     string
	br       *bufio.Reader
	pos      int64 // bytes of the file the walk has read or skipped
	progress *Progress
}

func newFileSource(f *os.File, path string, progress *Progress) *fileSource {
	return &fileSource{f: f, path: path, br: bufio.NewReaderSize(f, 256<<10), progress: progress}
}

func (s *fileSource) Read(p []byte) (int, error) {
	n, err := s.br.Read(p)
	s.pos += int64(n)
	s.progress.Add(int64(n))
	return n, err
}

// Seek is what tar.Reader asks of a reader to skip an entry's bytes: the
// position (0, io.SeekCurrent) and a move forward from it. A move past
// the end of the file is not an error here: the next read fails, as the
// tar reader expects (it reads the last byte of what it skips).
func (s *fileSource) Seek(off int64, whence int) (int64, error) {
	if whence != io.SeekCurrent || off < 0 {
		return s.pos, errors.New("an archive is read front to back")
	}
	if off == 0 {
		return s.pos, nil
	}
	if off <= int64(s.br.Buffered()) {
		s.br.Discard(int(off))
	} else {
		if _, err := s.f.Seek(s.pos+off, io.SeekStart); err != nil {
			return s.pos, err
		}
		s.br.Reset(s.f)
	}
	s.pos += off
	s.progress.Add(off)
	return s.pos, nil
}

// fileIsTar says whether the file f starts with a tar header (isTar).
func fileIsTar(f *os.File) bool {
	b := make([]byte, 512)
	if _, err := f.ReadAt(b, 0); err != nil {
		return false
	}
	return bytes.Equal(b[257:262], []byte("ustar"))
}
