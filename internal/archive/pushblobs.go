package archive

import (
	"bytes"
	"io"

	"github.com/operator-publish/publish/internal/registry"
)

// The blobs push uploads from the archive (streamedBlob, the request body
// of its upload: streamBody).

// streamedBlob is a blob to upload (registry.BlobUploader.Upload): held
// in data, or read once from r as the archive is read.
type streamedBlob struct {
	data []byte
	r    io.Reader
	// path and off: a layer of an uncompressed archive (NAME.tar), sent
	// from the file by sendfile (registry.FileSection), which the walk
	// skipped (sendFromFile).
	path string
	off  int64
}

// body returns the request body of the blob's upload (of size bytes) and,
// for a blob held in data or sent from the file, a getBody that returns
// it again (nil for r: read once). Its error is the file's: cut short
// since the walk began (io.ErrUnexpectedEOF), or not readable.
func (b *streamedBlob) body(size int64) (io.ReadCloser, func() (io.ReadCloser, error), error) {
	switch {
	case b.path != "":
		open := func() (io.ReadCloser, error) { return registry.OpenSection(b.path, b.off, size) }
		body, err := open()
		return body, open, err
	case b.data != nil:
		getBody := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b.data)), nil }
		body, _ := getBody()
		return body, getBody, nil
	}
	return &streamBody{r: b.r}, nil, nil
}

// streamBody is the request body of a blob read from r (a spool, released
// by its upload): Close does nothing.
type streamBody struct {
	r io.Reader
}

func (d *streamBody) Read(p []byte) (int, error) { return d.r.Read(p) }
func (d *streamBody) Close() error               { return nil }
