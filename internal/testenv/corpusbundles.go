package testenv

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/operator-publish/publish/internal/bundle"
)

// CorpusBundles loads every bundle of the corpus at corpusDir from disk
// with bundle.Load, without a registry: both layouts (CorpusBundleDirs), a
// package-manifest bundle converted as BuildCorpus converts it (its
// channels from the package's package.yaml), each copied below work, a
// directory the caller owns. The bundles that load are returned, sorted by
// directory; the error joins one *BundleError per bundle that does not.
func CorpusBundles(corpusDir, work string) ([]*bundle.Bundle, error) {
	bs, err := corpusFindBundles(corpusDir)
	if err != nil {
		return nil, err
	}
	var out []*bundle.Bundle
	var errs []error
	for i, b := range bs {
		b.work = filepath.Join(work, fmt.Sprintf("%03d", i))
		if err := b.prepare(); err != nil {
			errs = append(errs, &BundleError{Dir: b.dir, Err: err})
			continue
		}
		lb, err := bundle.Load(b.work)
		if err != nil {
			errs = append(errs, &BundleError{Dir: b.dir, Err: err})
			continue
		}
		out = append(out, lb)
	}
	return out, errors.Join(errs...)
}
