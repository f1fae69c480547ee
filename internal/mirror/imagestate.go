package mirror

import (
	"sort"
	"sync"
	"sync/atomic"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// imageState collects what happened to one image.
type imageState struct {
	retries    atomic.Int64
	signatures atomic.Int64
	// sigMu guards sigDigests: the signature, attestation and referrer
	// manifests at the destination, copied now or there already.
	sigMu      sync.Mutex
	sigDigests map[string]bool
}

// sawSignature records a signature manifest at the destination.
func (st *imageState) sawSignature(d v1.Hash) {
	st.sigMu.Lock()
	defer st.sigMu.Unlock()
	if st.sigDigests == nil {
		st.sigDigests = map[string]bool{}
	}
	st.sigDigests[d.String()] = true
}

// signatureDigests returns the signature manifests seen, sorted.
func (st *imageState) signatureDigests() []string {
	st.sigMu.Lock()
	defer st.sigMu.Unlock()
	out := make([]string, 0, len(st.sigDigests))
	for d := range st.sigDigests {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}
