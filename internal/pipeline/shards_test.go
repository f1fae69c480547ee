package pipeline

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/shard"
)

// TestMirrorShards: N parts of `publish mirror --shard I/N` (N = 1, 2, 3
// and 5, more parts than repositories) each compute the same plan, copy
// disjoint sets of destination repositories that together cover it, copy
// every image exactly once across the parts, and leave the destination
// with every image; a part with nothing assigned succeeds.
func TestMirrorShards(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, n := range []int{1, 2, 3, 5} {
		dst := fmt.Sprintf("%s/n%d", f.dst, n)
		plans := map[string]bool{}
		owner := map[string]int{}
		copied := map[string]int{}
		total := 0
		for i := 1; i <= n; i++ {
			res, err := Mirror(ctx, MirrorOptions{Source: f.source, Mirror: mirror.Options{DstRegistry: dst, PlainHTTP: true}, Shard: shard.Shard{Index: i, Total: n}})
			if err != nil {
				t.Fatalf("%d/%d: %v", i, n, err)
			}
			plans[res.Plan.Digest] = true
			total = len(res.Plan.Items)
			for _, it := range res.Part {
				if o, ok := owner[it.Repository]; ok && o != i {
					t.Errorf("%d/%d: repository %s is also part %d's", i, n, it.Repository, o)
				}
				owner[it.Repository] = i
			}
			for _, r := range res.Report.Images {
				if !r.Skipped {
					copied[r.Source]++
				}
			}
		}
		if len(plans) != 1 {
			t.Errorf("N=%d: the parts computed %d plans", n, len(plans))
		}
		if len(copied) != total {
			t.Errorf("N=%d: %d images copied, the plan has %d", n, len(copied), total)
		}
		for src, c := range copied {
			if c != 1 {
				t.Errorf("N=%d: %s copied %d times", n, src, c)
			}
		}
		for _, v := range []string{"1.0.0", "1.1.0"} {
			for _, r := range []string{"tiny/bundle", "tiny/manager", "tiny/worker"} {
				if _, err := crane.Head(fmt.Sprintf("%s/%s:v%s", dst, r, v)); err != nil {
					t.Errorf("N=%d: %s:v%s is not at the destination: %v", n, r, v, err)
				}
			}
		}
	}
}
