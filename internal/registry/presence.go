package registry

import (
	"context"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// State is what one HEAD of a manifest found at a registry.
type State int

const (
	// Unknown: the registry did not say (credentials refused or missing,
	// TLS, unreachable, timeout, a cancelled context). Found.Err says why.
	Unknown State = iota
	// Present: the manifest is there, with the digest wanted (or with
	// any digest when none was wanted).
	Present
	// Missing: the registry answered 404, MANIFEST_UNKNOWN or
	// NAME_UNKNOWN.
	Missing
	// Mismatch: a manifest is there under the reference, with another
	// digest than the one wanted (a tag that has moved).
	Mismatch
)

// String returns the state's name as reports print it: "unknown",
// "present", "missing" or "mismatch".
func (s State) String() string {
	switch s {
	case Present:
		return "present"
	case Missing:
		return "missing"
	case Mismatch:
		return "mismatch"
	}
	return "unknown"
}

// Want is one manifest to look for: a reference, by digest or by tag, and
// the digest it must have. A zero Digest accepts any; for a reference by
// digest, the zero Digest means that digest.
type Want struct {
	Ref    name.Reference
	Digest v1.Hash
}

// Found is the answer for one Want: its State, and what the registry
// described (Digest, Size in bytes, MediaType) when it had a manifest. Err
// is the error of the HEAD when State is Unknown, nil otherwise.
type Found struct {
	Want
	State     State
	Digest    v1.Hash
	Size      int64
	MediaType types.MediaType
	Err       error
}

// PresenceCounts counts answers by State.
type PresenceCounts struct {
	Present, Missing, Mismatch, Unknown int
}

// Count returns how many of found are in each State.
func Count(found []Found) PresenceCounts {
	var c PresenceCounts
	for _, f := range found {
		switch f.State {
		case Present:
			c.Present++
		case Missing:
			c.Missing++
		case Mismatch:
			c.Mismatch++
		default:
			c.Unknown++
		}
	}
	return c
}

// DefaultPresenceConcurrency is the number of HEAD requests CheckPresence
// keeps in flight when given a concurrency below 1.
const DefaultPresenceConcurrency = 8

// CheckPresence asks a registry whether each wanted manifest is there,
// with one HEAD of /v2/<name>/manifests/<reference> per distinct reference
// (the OCI distribution spec, "Checking if content exists in the
// registry"): a reference listed twice is asked once. At most concurrency
// requests are in flight (DefaultPresenceConcurrency below 1). opts carry
// the credentials, transport and retries (Client.Options); a HEAD that
// fails for any reason but a not-found answer makes that Want Unknown,
// with the error, and never stops the others, so that the caller can tell
// "missing" from "could not look". It returns one Found per Want, in the
// order of wants; it reads nothing but the manifests' descriptors and
// writes nothing. A cancelled ctx makes the Wants not yet asked Unknown
// with ctx's error.
func CheckPresence(ctx context.Context, wants []Want, concurrency int, opts ...remote.Option) []Found {
	if concurrency < 1 {
		concurrency = DefaultPresenceConcurrency
	}
	type answer struct {
		desc *v1.Descriptor
		err  error
	}
	answers := map[string]*answer{}
	var order []string
	for _, w := range wants {
		k := w.Ref.String()
		if _, ok := answers[k]; !ok {
			answers[k] = &answer{}
			order = append(order, k)
		}
	}
	refs := map[string]name.Reference{}
	for _, w := range wants {
		refs[w.Ref.String()] = w.Ref
	}
	o := append(append([]remote.Option{}, opts...), remote.WithContext(ctx))
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for _, k := range order {
		a := answers[k]
		if err := ctx.Err(); err != nil {
			a.err = err
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			a.desc, a.err = remote.Head(refs[k], o...)
		}()
	}
	wg.Wait()

	out := make([]Found, len(wants))
	for i, w := range wants {
		a := answers[w.Ref.String()]
		f := Found{Want: w}
		switch {
		case a.err != nil && IsNotFound(a.err):
			f.State = Missing
		case a.err != nil:
			f.State, f.Err = Unknown, a.err
		default:
			f.Digest, f.Size, f.MediaType = a.desc.Digest, a.desc.Size, a.desc.MediaType
			f.State = Present
			if want := wantedDigest(w); want != (v1.Hash{}) && want != a.desc.Digest {
				f.State = Mismatch
			}
		}
		out[i] = f
	}
	return out
}

// wantedDigest is the digest w must have: its Digest, or the digest of a
// reference by digest.
func wantedDigest(w Want) v1.Hash {
	if w.Digest != (v1.Hash{}) {
		return w.Digest
	}
	if d, ok := w.Ref.(name.Digest); ok {
		if h, err := v1.NewHash(d.DigestStr()); err == nil {
			return h
		}
	}
	return v1.Hash{}
}
