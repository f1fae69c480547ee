package lint

import (
	"sync"

	"github.com/operator-framework/api/pkg/manifests"
	verrors "github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"

	"github.com/operator-publish/publish/internal/bundle"
)

// The CRD validator's findings on one CRD depend on that CRD alone
// (operator-framework/api, pkg/validation/internal/crd.go: each CRD is
// defaulted, converted and checked by the API server's own validation),
// and the consecutive versions of a package mostly ship the same CRDs,
// which is most of that validator's time. So its results are kept by the
// CRD's content key (bundle.Bundle.CRDKey), for at most maxCRDResults CRDs.
const maxCRDResults = 1 << 16

var crdResults = struct {
	sync.Mutex
	m map[[32]byte][]verrors.ManifestResult
}{m: map[[32]byte][]verrors.ManifestResult{}}

// validateCRDs runs the CRD validator v on each CRD of lb, the copies
// runValidators made of b.Loaded's (same order, V1CRDs then V1beta1CRDs, as
// manifests.Bundle.ObjectsToValidate gives them), one CRD at a time, and
// returns the results in that order as v would on the whole list. A CRD
// whose content key is known and was validated before is not validated
// again. A panic of v on any CRD is returned as crash, with no results.
func validateCRDs(v interfaces.Validator, b *bundle.Bundle, lb *manifests.Bundle) (results []verrors.ManifestResult, crash any) {
	var originals, copies []any
	for i, c := range b.Loaded.V1CRDs {
		originals, copies = append(originals, c), append(copies, lb.V1CRDs[i])
	}
	for i, c := range b.Loaded.V1beta1CRDs {
		originals, copies = append(originals, c), append(copies, lb.V1beta1CRDs[i])
	}
	for i, o := range originals {
		key, ok := b.CRDKey(o)
		if ok {
			crdResults.Lock()
			r, hit := crdResults.m[key]
			crdResults.Unlock()
			if hit {
				results = append(results, r...)
				continue
			}
		}
		r, crash := runOne(v, []any{copies[i]})
		if crash != nil {
			return nil, crash
		}
		if ok {
			r = keepable(r)
			crdResults.Lock()
			if len(crdResults.m) >= maxCRDResults {
				clear(crdResults.m)
			}
			crdResults.m[key] = r
			crdResults.Unlock()
		}
		results = append(results, r...)
	}
	return results, nil
}

// keepable returns rs with each finding's BadValue as validatorMessage
// prints it (the text of a plain value) or nil: a kept finding must not
// hold the converted CRD its value may point into.
func keepable(rs []verrors.ManifestResult) []verrors.ManifestResult {
	out := make([]verrors.ManifestResult, len(rs))
	for i, r := range rs {
		out[i] = verrors.ManifestResult{Name: r.Name}
		for _, e := range r.Errors {
			out[i].Errors = append(out[i].Errors, keepableError(e))
		}
		for _, e := range r.Warnings {
			out[i].Warnings = append(out[i].Warnings, keepableError(e))
		}
	}
	return out
}

func keepableError(e verrors.Error) verrors.Error {
	if v, ok := printable(e.BadValue); ok {
		e.BadValue = v
	} else {
		e.BadValue = nil
	}
	return e
}
