package mirror

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Bounds on what a source registry can make a copy walk: an image index
// lists at most MaxIndexChildren manifests, and indexes nest at most
// MaxIndexDepth deep (an image index of image indexes of images is depth
// 2). Real multi-platform images have tens of children and depth 1 or 2;
// an index of 400,000 children or a deep chain is a hostile or broken
// registry, refused before any child is fetched.
const (
	MaxIndexChildren = 1024
	MaxIndexDepth    = 8
)

type indexDepthKey struct{}

// checkIndex returns the context for the children of the index digest (at
// one more level of nesting) or a *PermanentError when the index has too
// many children or nests too deep.
func checkIndex(ctx context.Context, digest v1.Hash, im *v1.IndexManifest) (context.Context, error) {
	if n := len(im.Manifests); n > MaxIndexChildren {
		return nil, &PermanentError{Err: fmt.Errorf("index %s lists %d manifests, over the limit of %d: the source registry is broken or hostile", digest, n, MaxIndexChildren)}
	}
	depth, _ := ctx.Value(indexDepthKey{}).(int)
	depth++
	if depth > MaxIndexDepth {
		return nil, &PermanentError{Err: fmt.Errorf("index %s is nested %d indexes deep, over the limit of %d: the source registry is broken or hostile", digest, depth, MaxIndexDepth)}
	}
	return context.WithValue(ctx, indexDepthKey{}, depth), nil
}
