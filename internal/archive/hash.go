package archive

import (
	"crypto/sha256"
	"hash"
	"io"
	"sync"
)

// asyncWriter hands what is written to it to w in another goroutine, so
// that writing the archive file and hashing it run beside the reading and
// the compressing (on the other core) instead of after them. Writes are
// copied into chunks of at most 1 MiB; at most 8 wait, so memory stays
// bounded. The first error of w is returned by the following Write and by
// Close; after it, the bytes are dropped.
type asyncWriter struct {
	ch   chan []byte
	done chan struct{}
	w    io.Writer
	free chan []byte

	mu  sync.Mutex
	err error
}

func newAsyncWriter(w io.Writer) *asyncWriter {
	a := &asyncWriter{ch: make(chan []byte, 8), done: make(chan struct{}), w: w, free: make(chan []byte, 10)}
	go func() {
		defer close(a.done)
		for b := range a.ch {
			if a.error() == nil {
				if _, err := a.w.Write(b); err != nil {
					a.mu.Lock()
					a.err = err
					a.mu.Unlock()
				}
			}
			select {
			case a.free <- b[:0]:
			default:
			}
		}
	}()
	return a
}

func (a *asyncWriter) error() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *asyncWriter) Write(p []byte) (int, error) {
	if err := a.error(); err != nil {
		return 0, err
	}
	n := len(p)
	for len(p) > 0 {
		var b []byte
		select {
		case b = <-a.free:
		default:
			b = make([]byte, 0, 1<<20)
		}
		k := min(len(p), cap(b))
		b = append(b[:0], p[:k]...)
		a.ch <- b
		p = p[k:]
	}
	return n, nil
}

// Close waits until w has everything (or failed) and returns w's first
// error. The writer takes no more writes.
func (a *asyncWriter) Close() error {
	close(a.ch)
	<-a.done
	return a.error()
}

// asyncHash is a sha256 of what is written to it, computed in another
// goroutine (asyncWriter).
type asyncHash struct {
	*asyncWriter
	h hash.Hash
}

func newAsyncHash() *asyncHash {
	h := sha256.New()
	return &asyncHash{asyncWriter: newAsyncWriter(h), h: h}
}

// Sum waits for every write to be hashed and returns the digest. The hash
// takes no more writes.
func (a *asyncHash) Sum() []byte {
	a.Close()
	return a.h.Sum(nil)
}
