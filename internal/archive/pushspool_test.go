package archive

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// TestSpoolCarriesBounded: a layer larger than the pool goes through a
// spool whole and in order while its upload reads it, with no more chunks
// made than the pool holds.
func TestSpoolCarriesBounded(t *testing.T) {
	pool := newChunkPool(1)
	data := make([]byte, 3*spoolPerJob+12345)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	sp := newSpool(pool)
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(sp)
		sp.release()
		got <- b
	}()
	if err := sp.fill(t.Context(), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if b := <-got; !bytes.Equal(b, data) {
		t.Fatalf("read %d bytes, not the %d written", len(b), len(data))
	}
	if pool.made > cap(pool.free) || len(pool.free) != pool.made {
		t.Errorf("%d chunks made, %d back in the pool of %d", pool.made, len(pool.free), cap(pool.free))
	}
}

// TestSpoolEntryError: an upload reads the blob through the spool chunk
// after chunk, in order; an entry's error (a digest that does not match)
// ends the upload's read with it, so the registry never commits it.
func TestSpoolEntryError(t *testing.T) {
	data := make([]byte, 2*spoolChunk+777)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for _, broken := range []bool{false, true} {
		pool := newChunkPool(1)
		sp := newSpool(pool)
		var w bytes.Buffer
		done := make(chan error)
		go func() {
			_, err := io.Copy(&w, sp)
			sp.release()
			done <- err
		}()
		var src io.Reader = bytes.NewReader(data)
		if broken {
			src = damaged{src}
		}
		sp.fill(t.Context(), src)
		err := <-done
		switch {
		case broken && !errors.Is(err, errDamaged):
			t.Errorf("a damaged entry: the read returned %v", err)
		case !broken && (err != nil || !bytes.Equal(w.Bytes(), data)):
			t.Errorf("%d bytes (%v), want %d", w.Len(), err, len(data))
		}
	}
}

// damaged reads like an archive entry whose digest does not match: its
// bytes, then an error instead of EOF.
type damaged struct{ r io.Reader }

var errDamaged = errors.New("digest mismatch")

func (d damaged) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err == io.EOF {
		return n, errDamaged
	}
	return n, err
}

// TestSpoolDamagedAndGone: the upload reads an entry's error in place of
// EOF (so that the registry commits nothing); an upload that gives up
// stops the walk waiting for a chunk.
func TestSpoolDamagedAndGone(t *testing.T) {
	pool := newChunkPool(1)
	sp := newSpool(pool)
	done := make(chan error)
	go func() {
		_, err := io.ReadAll(sp)
		done <- err
	}()
	if err := sp.fill(t.Context(), damaged{bytes.NewReader(make([]byte, 3*spoolChunk))}); !errors.Is(err, errDamaged) {
		t.Fatalf("fill: %v", err)
	}
	if err := <-done; !errors.Is(err, errDamaged) {
		t.Fatalf("the upload read %v, want the entry's error", err)
	}
	sp.release()

	sp = newSpool(pool)
	first := make([]byte, 1)
	go func() {
		io.ReadFull(sp, first) // one byte, then the upload fails
		sp.release()
	}()
	if err := sp.fill(t.Context(), bytes.NewReader(make([]byte, 4*spoolPerJob))); !errors.Is(err, errSpoolGone) {
		t.Fatalf("fill after the upload gave up: %v", err)
	}
	if _, err := sp.Read(first); !errors.Is(err, errSpoolGone) {
		t.Errorf("a read after release: %v", err)
	}
}
