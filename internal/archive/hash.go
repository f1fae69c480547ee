package archive

import (
	"crypto/sha256"
	"hash"
)

// asyncHash is a sha256 of what is written to it, computed in another
// goroutine: hashing the whole archive then runs beside the blob digests
// (the second core) instead of after them. Writes are copied into chunks
// of at most 1 MiB; at most 8 wait, so memory stays bounded.
type asyncHash struct {
	ch   chan []byte
	done chan struct{}
	h    hash.Hash
	free chan []byte
}

func newAsyncHash() *asyncHash {
	a := &asyncHash{ch: make(chan []byte, 8), done: make(chan struct{}), h: sha256.New(), free: make(chan []byte, 10)}
	go func() {
		defer close(a.done)
		for b := range a.ch {
			a.h.Write(b)
			select {
			case a.free <- b[:0]:
			default:
			}
		}
	}()
	return a
}

func (a *asyncHash) Write(p []byte) (int, error) {
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

// Sum waits for every write to be hashed and returns the digest. The hash
// takes no more writes.
func (a *asyncHash) Sum() []byte {
	close(a.ch)
	<-a.done
	return a.h.Sum(nil)
}
