package archive

import (
	"context"
	"errors"
	"io"
	"sync"
)

// Uploading several layers at once from one archive: a gzip stream is
// read front to back, by one walk. The walk reads each layer to upload
// (checking its digest and the stream's CRC-32 as before) into a spool,
// chunks of a pool shared by all uploads, and goes on to the next entry
// while the layer's upload sends the spool; when the pool is used up the
// walk waits for an upload to send a chunk. The walk decompresses and
// hashes faster than a registry receives one upload, so with the pool
// several uploads run at once, as crane push sends them from a layout,
// and nothing is read twice or written to the disk.

const (
	// spoolChunk is the size of a pool chunk, in bytes.
	spoolChunk = 1 << 20
	// spoolPerJob is the pool's size per upload in flight (Jobs), in
	// bytes: 128 MiB for the default 8 (DefaultJobs).
	spoolPerJob = 16 << 20
)

// chunkPool holds the chunks of the spools: at most max, made as needed.
type chunkPool struct {
	free chan []byte
	mu   sync.Mutex
	made int
}

func newChunkPool(jobs int) *chunkPool {
	n := max(1, jobs) * spoolPerJob / spoolChunk
	return &chunkPool{free: make(chan []byte, n)}
}

// get returns a chunk: a free one, a new one while fewer than the pool's
// size were made, or the next one an upload gives back. It fails when
// ctx ends or gone is closed (the upload gave up).
func (c *chunkPool) get(ctx context.Context, gone <-chan struct{}) ([]byte, error) {
	select {
	case b := <-c.free:
		return b, nil
	default:
	}
	c.mu.Lock()
	if c.made < cap(c.free) {
		c.made++
		c.mu.Unlock()
		return make([]byte, spoolChunk), nil
	}
	c.mu.Unlock()
	select {
	case b := <-c.free:
		return b, nil
	case <-gone:
		return nil, errSpoolGone
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *chunkPool) put(b []byte) {
	select {
	case c.free <- b[:cap(b)]:
	default: // not ours (cannot happen): left to the garbage collector
	}
}

var errSpoolGone = errors.New("the upload of this blob was given up")

// spool is one layer on its way from the walk to its upload: the walk
// fills it (fill), the upload reads it (Read) and releases it when done.
type spool struct {
	pool   *chunkPool
	chunks chan []byte // filled chunks, in order; closed after the last
	err    error       // the entry's read error (set before chunks is closed); nil: EOF
	gone   chan struct{}
	once   sync.Once

	mu  sync.Mutex // the reader's side: the HTTP transport may still read after the upload returned
	cur []byte     // the rest of the chunk being read
	buf []byte     // that chunk, to give back
	off bool       // released
}

func newSpool(pool *chunkPool) *spool {
	return &spool{pool: pool, chunks: make(chan []byte, cap(pool.free)+1), gone: make(chan struct{})}
}

// fill reads body (an archive entry, which fails on a digest mismatch)
// into the spool to its end. Its error is the entry's, errSpoolGone when
// the upload gave up, or ctx's; the reader sees the entry's error in
// place of EOF, so that a damaged blob is never committed.
func (s *spool) fill(ctx context.Context, body io.Reader) error {
	for {
		b, err := s.pool.get(ctx, s.gone)
		if err != nil {
			s.finish(err)
			return err
		}
		n := 0
		var rerr error
		for n < len(b) && rerr == nil {
			var k int
			k, rerr = body.Read(b[n:])
			n += k
		}
		if n > 0 {
			s.chunks <- b[:n]
		} else {
			s.pool.put(b)
		}
		if rerr == io.EOF {
			s.finish(nil)
			return nil
		}
		if rerr != nil {
			s.finish(rerr)
			return rerr
		}
	}
}

func (s *spool) finish(err error) {
	s.err = err
	close(s.chunks)
}

func (s *spool) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.next(); err != nil {
		return 0, err
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

// next makes s.cur the rest of a chunk, waiting for the walk to fill one:
// io.EOF at the blob's end, errSpoolGone after release, or the walk's
// error. The caller holds s.mu.
func (s *spool) next() error {
	for len(s.cur) == 0 {
		if s.off {
			return errSpoolGone
		}
		if s.buf != nil {
			s.pool.put(s.buf)
			s.buf = nil
		}
		b, ok := <-s.chunks
		if !ok {
			if s.err != nil {
				return s.err
			}
			return io.EOF
		}
		s.cur, s.buf = b, b
	}
	return nil
}

// release ends the reader's side: reads fail from now on, the walk stops
// filling, and the chunks read or queued go back to the pool (those the
// walk still queues are left to the garbage collector: the push fails).
func (s *spool) release() {
	s.once.Do(func() { close(s.gone) })
	s.mu.Lock()
	defer s.mu.Unlock()
	s.off = true
	if s.buf != nil {
		s.pool.put(s.buf)
		s.buf, s.cur = nil, nil
	}
	for {
		select {
		case b, ok := <-s.chunks:
			if !ok {
				return
			}
			s.pool.put(b)
		default:
			return
		}
	}
}
