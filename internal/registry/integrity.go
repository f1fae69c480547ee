package registry

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// DigestMismatchError says that a registry served, for a blob or manifest
// asked for by digest, bytes of another digest or size (OCI distribution
// spec: content is addressed by its digest, and a client must verify it).
// Host is the registry that served them; Got is "" when the size was
// wrong.
type DigestMismatchError struct {
	Host       string
	Want       v1.Hash
	Got        string
	Size, Read int64
}

func (e *DigestMismatchError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("%s served %d bytes for %s of %d bytes", e.Host, e.Read, e.Want, e.Size)
	}
	return fmt.Sprintf("%s served bytes of %s for %s", e.Host, e.Got, e.Want)
}

// VerifyReader returns rc (the body of the blob want, size bytes, from
// host) checking as it is read that the bytes are those of want: a read
// error after size bytes, or bytes beyond size, whose digest is not want
// becomes a *DigestMismatchError, which Classify tells from a network
// failure. Other errors pass unchanged. It adds to, not replaces, the
// check of go-containerregistry underneath, whose error is untyped.
func VerifyReader(rc io.ReadCloser, host string, want v1.Hash, size int64) io.ReadCloser {
	if want.Algorithm != "sha256" {
		return rc
	}
	return &verifyReader{rc: rc, h: sha256.New(), host: host, want: want, size: size}
}

type verifyReader struct {
	rc   io.ReadCloser
	h    hash.Hash
	host string
	want v1.Hash
	size int64
	n    int64
}

func (v *verifyReader) Read(p []byte) (int, error) {
	n, err := v.rc.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if err == nil && (v.size < 0 || v.n <= v.size) {
		return n, nil
	}
	if v.size >= 0 && v.n > v.size {
		return n, &DigestMismatchError{Host: v.host, Want: v.want, Size: v.size, Read: v.n}
	}
	if v.size < 0 || v.n == v.size {
		if got := fmt.Sprintf("sha256:%x", v.h.Sum(nil)); got != v.want.String() {
			return n, &DigestMismatchError{Host: v.host, Want: v.want, Got: got, Size: v.size, Read: v.n}
		}
	}
	return n, err
}

func (v *verifyReader) Close() error { return v.rc.Close() }

// localDisk reports whether err is this machine's disk being full or over
// quota.
func localDisk(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
