// Package shards benchmarks a mirror split over a CI matrix (`publish
// mirror --shard I/N`, docs/scale-out.md): for N parts it records the
// bytes each part uploads to the destination and the requests it makes
// there, to show that both fall as 1/N, the plan's work (one GET per
// manifest at the source, which every part makes) aside.
//
// The fleet is generated here, deterministically: -artifacts repositories
// with -versions tags each, every image one layer of its own whose size
// is drawn from a seeded stream (512 B to 16 KiB by default: what is
// measured is how the work divides, not throughput). Under go test
// -short the benchmark skips.
package shards

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/shard"
)

var (
	artifacts = flag.Int("artifacts", 400, "repositories in the fleet")
	versions  = flag.Int("versions", 5, "tags per repository")
	maxKiB    = flag.Int("max-kib", 16, "largest layer, KiB")
	parts     = flag.String("parts", "1,2,4,8", "the values of N")
)

// counter counts the requests a registry serves and the bytes uploaded to
// it (request bodies of PUT and PATCH).
type counter struct {
	mu       sync.Mutex
	requests int64
	bytes    int64
}

func (c *counter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int64
		if r.Method == http.MethodPut || r.Method == http.MethodPatch {
			body, _ := io.ReadAll(r.Body)
			n = int64(len(body))
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		c.mu.Lock()
		c.requests++
		c.bytes += n
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (c *counter) take() (requests, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	requests, bytes = c.requests, c.bytes
	c.requests, c.bytes = 0, 0
	return requests, bytes
}

func quiet() *log.Logger { return log.New(io.Discard, "", 0) }

// fleet pushes the generated images to src and returns their references.
func fleet(b *testing.B, src string) []string {
	b.Helper()
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	var refs []string
	for a := range *artifacts {
		for v := range *versions {
			size := 512 + rng.IntN(*maxKiB*1024-512)
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			img, err := mutate.AppendLayers(empty.Image, static.NewLayer(data, types.OCILayer))
			if err != nil {
				b.Fatal(err)
			}
			ref := fmt.Sprintf("%s/fleet/op%04d:v%d", src, a, v)
			r, err := name.ParseReference(ref)
			if err != nil {
				b.Fatal(err)
			}
			if err := remote.Write(r, img); err != nil {
				b.Fatal(err)
			}
			refs = append(refs, ref)
		}
	}
	return refs
}

// BenchmarkShards mirrors the fleet once per N, each into a fresh
// destination, part after part, and reports per N the largest and the
// smallest part's uploaded bytes and requests against the mean (the
// spread, in percent: 0 is an even split), and the plan's GETs at the
// source per part.
func BenchmarkShards(b *testing.B) {
	if testing.Short() {
		b.Skip("generates and copies a fleet of images")
	}
	srcCount := &counter{}
	srcSrv := httptest.NewServer(srcCount.wrap(registry.New(registry.Logger(quiet()))))
	defer srcSrv.Close()
	src := strings.TrimPrefix(srcSrv.URL, "http://")
	refs := fleet(b, src)
	srcCount.take()
	var ns []int
	for _, f := range strings.Split(*parts, ",") {
		var n int
		fmt.Sscan(f, &n)
		ns = append(ns, n)
	}
	b.ResetTimer()
	for range b.N {
		for _, n := range ns {
			dstCount := &counter{}
			dstSrv := httptest.NewServer(dstCount.wrap(registry.New(registry.Logger(quiet()))))
			dst := strings.TrimPrefix(dstSrv.URL, "http://")
			var reqs, bytes []int64
			var planGets int64
			for i := 1; i <= n; i++ {
				_, err := pipeline.Mirror(context.Background(), pipeline.MirrorOptions{Images: refs, Shard: shard.Shard{Index: i, Total: n},
					Mirror: mirror.Options{DstRegistry: dst + "/m", PlainHTTP: true, SkipSignatures: true}})
				if err != nil {
					b.Fatalf("%d/%d: %v", i, n, err)
				}
				r, by := dstCount.take()
				g, _ := srcCount.take()
				reqs, bytes, planGets = append(reqs, r), append(bytes, by), g
			}
			dstSrv.Close()
			spread := func(xs []int64) (lo, hi float64) {
				var sum int64
				for _, x := range xs {
					sum += x
				}
				mean := float64(sum) / float64(len(xs))
				lo, hi = 0, 0
				for _, x := range xs {
					d := (float64(x) - mean) / mean * 100
					lo, hi = min(lo, d), max(hi, d)
				}
				return lo, hi
			}
			blo, bhi := spread(bytes)
			rlo, rhi := spread(reqs)
			b.Logf("N=%d: bytes per part %v (%+.1f%% to %+.1f%% of the mean); destination requests per part %v (%+.1f%% to %+.1f%%); source requests of the last part %d", n, bytes, blo, bhi, reqs, rlo, rhi, planGets)
			b.ReportMetric(bhi, fmt.Sprintf("N%d-bytes-max-%%", n))
			b.ReportMetric(rhi, fmt.Sprintf("N%d-requests-max-%%", n))
		}
	}
}
