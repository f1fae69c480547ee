package registry

import (
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// Sending a blob from a file with sendfile: when a request body is a file
// at the offset of its bytes, net/http hands the file to the socket
// (TCPConn.ReadFrom under the io.LimitedReader of Content-Length, Linux's
// sendfile(2)), so the bytes go from the page cache to the connection
// without being copied through the process, as crane push sends an OCI
// layout's blobs. Over TLS the file is read through Read as any body.

// sendfileBody is a request body that is a file at the offset of its
// bytes (a FileSection: an uncompressed archive's layer). net/http sends it by
// sendfile (Linux) when the connection is plain TCP: the bytes go from the
// file to the socket without being read, so Read is never called.
type sendfileBody interface {
	io.ReadCloser
	SyscallConn() (syscall.RawConn, error)
	// Offset is the file's offset: where sendfile got to (kept once
	// the body is closed).
	Offset() int64
}

// fileBody is a progressBody whose file net/http can still send by
// sendfile (it looks for SyscallConn under the io.LimitedReader it wraps
// the body in); over TLS the file is read through Read as any body.
type fileBody struct {
	progressBody
	f sendfileBody
}

func (b *fileBody) SyscallConn() (syscall.RawConn, error) { return b.f.SyscallConn() }

// offsetMoved returns a function saying whether f's offset moved since the
// last call (since now for the first): how a request sent by sendfile,
// which never calls Read, shows progress to its watchdog.
func offsetMoved(f sendfileBody) func() bool {
	last := f.Offset()
	return func() bool {
		pos := f.Offset()
		if pos == last {
			return false
		}
		last = pos
		return true
	}
}

// FileSection is size bytes of a file from offset off, as a request body
// (an io.ReadCloser) that net/http sends by sendfile: it reads as the
// section alone (EOF at its end, as net/http checks a body against its
// Content-Length), tells where the file's offset is, and hands the file's descriptor to
// the connection (SyscallConn). Set the request's ContentLength to Size.
// Not safe for concurrent use; Close closes the file.
type FileSection struct {
	f    *os.File
	end  int64 // offset of the byte after the section
	Size int64

	mu     sync.Mutex
	closed bool
	at     int64 // the offset when closed
}

// OpenSection opens path for the size bytes at offset off. Errors: the
// file cannot be opened, or is shorter than off+size.
func OpenSection(path string, off, size int64) (*FileSection, error) {
	if off < 0 || size < 0 {
		return nil, fmt.Errorf("%s: section of %d bytes at %d: negative", path, size, off)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.Size() < off+size {
		err = fmt.Errorf("%s: %d bytes, shorter than the section of %d bytes at %d: %w", path, st.Size(), size, off, io.ErrUnexpectedEOF)
	}
	if err == nil {
		_, err = f.Seek(off, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &FileSection{f: f, end: off + size, Size: size}, nil
}

// Read reads the section from the file's offset (where sendfile left
// it), EOF at the section's end.
func (s *FileSection) Read(p []byte) (int, error) {
	pos, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	left := s.end - pos
	if left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := s.f.Read(p)
	if err == io.EOF && int64(n) < left {
		err = io.ErrUnexpectedEOF // the file was cut short since it was opened
	}
	return n, err
}

// Offset is the file's offset (where sendfile got to), the last one once
// closed; -1 when it cannot be read.
func (s *FileSection) Offset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.at
	}
	pos, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return -1
	}
	return pos
}

// SyscallConn is the file's: net/http's sendfile takes the descriptor.
func (s *FileSection) SyscallConn() (syscall.RawConn, error) { return s.f.SyscallConn() }

// Close closes the file, keeping its offset for Offset; closing again
// does nothing.
func (s *FileSection) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.at, _ = s.f.Seek(0, io.SeekCurrent)
	s.closed = true
	return s.f.Close()
}

var _ sendfileBody = (*FileSection)(nil)
