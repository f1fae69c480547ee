package catalog

import (
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Overlay is an object store that reads through to a base store and keeps
// every object written to it in memory: a commit is written from Git
// objects without touching the repo it was read from (a local catalog is
// opened in place and only changed by the push).
type Overlay struct {
	base storer.EncodedObjectStorer
	mem  map[plumbing.Hash]plumbing.EncodedObject
}

// NewOverlay returns an Overlay over base (nil: no base, every read of an
// object not written misses).
func NewOverlay(base storer.EncodedObjectStorer) *Overlay {
	return &Overlay{base: base, mem: map[plumbing.Hash]plumbing.EncodedObject{}}
}

// Written is the number of objects held in memory.
func (o *Overlay) Written() int { return len(o.mem) }

// NewEncodedObject implements storer.EncodedObjectStorer.
func (o *Overlay) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

// SetEncodedObject keeps obj in memory.
func (o *Overlay) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h := obj.Hash()
	o.mem[h] = obj
	return h, nil
}

// EncodedObject returns the object written, else the base's.
func (o *Overlay) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if obj, ok := o.mem[h]; ok {
		if t != plumbing.AnyObject && obj.Type() != t {
			return nil, plumbing.ErrObjectNotFound
		}
		return obj, nil
	}
	if o.base == nil {
		return nil, plumbing.ErrObjectNotFound
	}
	return o.base.EncodedObject(t, h)
}

// IterEncodedObjects iterates the objects written to memory only (the
// base is not listed).
func (o *Overlay) IterEncodedObjects(t plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	var out []plumbing.EncodedObject
	for _, obj := range o.mem {
		if t == plumbing.AnyObject || obj.Type() == t {
			out = append(out, obj)
		}
	}
	return storer.NewEncodedObjectSliceIter(out), nil
}

// HasEncodedObject reports nil when the object is in memory or the base.
func (o *Overlay) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := o.mem[h]; ok {
		return nil
	}
	if o.base == nil {
		return plumbing.ErrObjectNotFound
	}
	return o.base.HasEncodedObject(h)
}

// EncodedObjectSize returns the size of the object in memory or the base.
func (o *Overlay) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if obj, ok := o.mem[h]; ok {
		return obj.Size(), nil
	}
	if o.base == nil {
		return 0, plumbing.ErrObjectNotFound
	}
	return o.base.EncodedObjectSize(h)
}

// AddAlternate is not supported.
func (o *Overlay) AddAlternate(string) error {
	return errors.New("catalog overlay store: alternates are not supported")
}
