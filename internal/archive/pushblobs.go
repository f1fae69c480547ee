package archive

import (
	"bytes"
	"io"
)

// The blobs push uploads from the archive (streamedBlob, the request body
// of its upload: streamBody).

// streamedBlob is a blob to upload (registry.BlobUploader.Upload): held
// in data, or read once from r as the archive is read.
type streamedBlob struct {
	data []byte
	r    io.Reader
}

// body returns the request body of the blob's upload and, for a blob held
// in data, a getBody that returns it again (nil for r: read once).
func (b *streamedBlob) body() (io.ReadCloser, func() (io.ReadCloser, error)) {
	if b.data != nil {
		getBody := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b.data)), nil }
		body, _ := getBody()
		return body, getBody
	}
	return &streamBody{r: b.r}, nil
}

// streamBody is the request body of a blob read from r (a spool, released
// by its upload): Close does nothing.
type streamBody struct {
	r io.Reader
}

func (d *streamBody) Read(p []byte) (int, error) { return d.r.Read(p) }
func (d *streamBody) Close() error               { return nil }

// WriteTo hands the blob to w through its reader's WriteTo when it has one
// (a spool: whole chunks).
func (d *streamBody) WriteTo(w io.Writer) (int64, error) {
	wt, ok := d.r.(io.WriterTo)
	if !ok {
		return io.Copy(w, struct{ io.Reader }{d})
	}
	return wt.WriteTo(w)
}
