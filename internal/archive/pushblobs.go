package archive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/stream"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The layers push hands to go-containerregistry's remote.Pusher: a blob
// streamed from the archive (streamedBlob, doneReader) and a blob mounted
// from another repository of the destination (mountedBlob).

// streamedBlob is a blob to upload (a remote.Pusher layer): held in data,
// or read once from r as the archive is read. Its digest is "not computed"
// until its bytes were read (stream.ErrNotComputed), so that the upload
// asks no HEAD first (push asked already) and commits with the digest.
type streamedBlob struct {
	digest v1.Hash
	size   int64
	mt     types.MediaType
	data   []byte
	r      io.Reader
	mu     sync.Mutex
	read   bool // the bytes went out once
}

func (b *streamedBlob) Digest() (v1.Hash, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.read {
		return v1.Hash{}, stream.ErrNotComputed
	}
	return b.digest, nil
}

// Compressed returns the bytes: data again for each call, r once.
func (b *streamedBlob) Compressed() (io.ReadCloser, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.data != nil {
		return &doneReader{b: b, r: bytes.NewReader(b.data)}, nil
	}
	if b.r == nil {
		return nil, fmt.Errorf("blob %s streams from the archive once: run the push again to resume", b.digest)
	}
	r := b.r
	b.r = nil
	return &doneReader{b: b, r: r}, nil
}

func (b *streamedBlob) Uncompressed() (io.ReadCloser, error) {
	return nil, errors.New("a pushed blob is not decompressed")
}
func (b *streamedBlob) DiffID() (v1.Hash, error)            { return v1.Hash{}, errors.New("no diff ID") }
func (b *streamedBlob) Size() (int64, error)                { return b.size, nil }
func (b *streamedBlob) MediaType() (types.MediaType, error) { return b.mt, nil }

// doneReader marks its blob read at EOF.
type doneReader struct {
	b *streamedBlob
	r io.Reader
}

func (d *doneReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err == io.EOF {
		d.b.mu.Lock()
		d.b.read = true
		d.b.mu.Unlock()
	}
	return n, err
}
func (d *doneReader) Close() error { return nil }

// WriteTo hands the blob to w through its reader's WriteTo when it has one
// (a spool: whole chunks), marking the blob read at its end.
func (d *doneReader) WriteTo(w io.Writer) (int64, error) {
	wt, ok := d.r.(io.WriterTo)
	if !ok {
		return io.Copy(w, struct{ io.Reader }{d})
	}
	n, err := wt.WriteTo(w)
	if err == nil {
		d.b.mu.Lock()
		d.b.read = true
		d.b.mu.Unlock()
	}
	return n, err
}

// mountedBlob is a blob the destination has in repository from, to mount
// into another (remote.MountableLayer): its digest, size and media type
// are the archive's, so that mounting it asks the registry nothing about
// it (a remote layer's size is one HEAD more per mount); its bytes are
// read from the destination only when the registry does not mount.
type mountedBlob struct {
	p      *pusher
	from   name.Digest
	digest v1.Hash
	size   int64
	mt     types.MediaType
}

func (b *mountedBlob) Compressed() (io.ReadCloser, error) {
	l, err := b.p.puller.Layer(b.p.gctx, b.from)
	if err != nil {
		return nil, err
	}
	return l.Compressed()
}

func (b *mountedBlob) Uncompressed() (io.ReadCloser, error) {
	return nil, errors.New("a mounted blob is not decompressed")
}
func (b *mountedBlob) Digest() (v1.Hash, error)            { return b.digest, nil }
func (b *mountedBlob) DiffID() (v1.Hash, error)            { return v1.Hash{}, errors.New("no diff ID") }
func (b *mountedBlob) Size() (int64, error)                { return b.size, nil }
func (b *mountedBlob) MediaType() (types.MediaType, error) { return b.mt, nil }
