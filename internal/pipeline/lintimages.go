package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
)

// describedImages is lint's image checker on the source registry whose
// failures say what to do, as a bundle read's do: every error but a
// missing image becomes mc.Describe's *registry.Error (the CA flag, the
// credential flags of the command, "cannot reach"), kept by reference so
// that Lint returns it, typed, in its *RegistryFailure instead of the
// images/check finding's text.
type describedImages struct {
	lint.ImageChecker
	mc *mirror.Client

	mu     sync.Mutex
	failed map[string]error // by reference
}

func newDescribedImages(mc *mirror.Client) *describedImages {
	return &describedImages{
		ImageChecker: lint.RegistryChecker{Parse: mc.ReadReference, Options: mc.SrcOptions()},
		mc:           mc, failed: map[string]error{},
	}
}

// Platforms implements lint.ImageChecker.
func (d *describedImages) Platforms(ctx context.Context, ref string) ([]string, error) {
	p, err := d.ImageChecker.Platforms(ctx, ref)
	if err == nil || errors.Is(err, lint.ErrImageNotFound) || ctx.Err() != nil {
		return p, err
	}
	host := strings.SplitN(ref, "/", 2)[0]
	if r, perr := d.mc.ReadReference(ref); perr == nil {
		host = r.Context().RegistryStr()
	}
	err = d.mc.Describe("checking image "+ref, host, err)
	d.mu.Lock()
	d.failed[ref] = err
	d.mu.Unlock()
	return nil, err
}

// failure returns the registry failure behind images/check finding f, at
// its manifest line, or false when f names no image this checker failed.
func (d *describedImages) failure(f lint.Finding) (error, bool) {
	if d == nil {
		return nil, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for ref, err := range d.failed {
		if strings.HasPrefix(f.Message, "image "+ref+" could not be checked: ") {
			return &imageCheckError{where: fmt.Sprintf("%s:%d", f.Path, f.Line), err: err}, true
		}
	}
	return nil, false
}

// imageCheckError is a registry failure checking a related image:
// "<manifest>:<line>: checking image <ref>: <what to do>: <error>".
type imageCheckError struct {
	where string
	err   error
}

func (e *imageCheckError) Error() string { return e.where + ": " + e.err.Error() }
func (e *imageCheckError) Unwrap() error { return e.err }
