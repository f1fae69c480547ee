package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/report"
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

// TestRunShardsEqualRun: a run split into N parts (N = 1, 3 and 7, more
// parts than repositories) and merged leaves the catalog tree of one run
// that is not split, each image copied exactly once across the parts, no
// repository split between parts and no commit before the merge; a merge
// missing a part or mixing parts of two splits is refused with nothing
// committed, and converges once the part is run.
func TestRunShardsEqualRun(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	opts := func(catalogDir, dst string) Options {
		return Options{Source: f.source, Catalog: catalogOpts(catalogDir), Mirror: mirror.Options{DstRegistry: dst, PlainHTTP: true}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	}
	bare := func() string {
		dir := filepath.Join(t.TempDir(), "catalog.git")
		if _, err := git.PlainInit(dir, true); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	results := map[int][]*report.Report{}
	for _, n := range []int{1, 3, 7} {
		dst := fmt.Sprintf("%s/n%d", f.dst, n)
		split := bare()
		copied := map[string]int{}
		owner := map[string]int{}
		var names []string
		for i := 1; i <= n; i++ {
			o := opts(split, dst)
			o.Shard = shard.Shard{Index: i, Total: n}
			res, err := Run(ctx, o)
			if err != nil {
				t.Fatalf("part %d/%d: %v", i, n, err)
			}
			if res.Shard == nil || res.Commit != "" {
				t.Fatalf("part %d/%d: shard %+v, commit %q: a part never commits", i, n, res.Shard, res.Commit)
			}
			for _, it := range res.Shard.Items {
				if o, ok := owner[it.Repository]; ok && o != i {
					t.Errorf("N=%d: %s in parts %d and %d", n, it.Repository, o, i)
				}
				owner[it.Repository] = i
			}
			for _, r := range res.Mirror.Images {
				if !r.Skipped {
					copied[r.Source]++
				}
			}
			r := report.New("run")
			r.AddMirror(res.Mirror, nil)
			r.AddShard(res.Shard.Part, res.Shard.Plan, res.Shard.Items)
			results[n] = append(results[n], r)
			names = append(names, fmt.Sprintf("part-%d.json", i))
			if i == n && len(copied) != len(res.Shard.Plan.Items) {
				t.Errorf("N=%d: %d images copied, the plan has %d", n, len(copied), len(res.Shard.Plan.Items))
			}
		}
		for src, c := range copied {
			if c != 1 {
				t.Errorf("N=%d: %s copied %d times", n, src, c)
			}
		}
		if repo, err := git.PlainOpen(split); err != nil {
			t.Fatal(err)
		} else if _, err := repo.Reference("refs/heads/main", true); err == nil {
			t.Fatalf("N=%d: the catalog has a commit before the merge", n)
		}
		if n == 3 {
			// A part missing: refused, nothing committed.
			if _, err := CheckShardResults(results[n][:2], names[:2]); err == nil || !strings.Contains(err.Error(), "no result of part 3/3") {
				t.Errorf("a part missing: %v", err)
			}
		}
		shards, err := CheckShardResults(results[n], names)
		if err != nil {
			t.Fatalf("N=%d: %v", n, err)
		}
		if n == 3 {
			// A merge that publishes to another destination than the
			// parts copied to: refused, nothing committed.
			o := opts(split, f.dst+"/elsewhere")
			o.Shards = shards
			var se *ShardsError
			if _, err := Run(ctx, o); !errors.As(err, &se) || !strings.Contains(err.Error(), "give the merge the parts' --dst-registry") {
				t.Errorf("merge to another destination: %v", err)
			}
			// A manifest the destination lost after the part copied
			// it: refused, naming it.
			gone := results[n][0].Images[0]
			for _, ref := range []string{gone.Destination, gone.Destination[:strings.LastIndexAny(gone.Destination, ":@")] + "@" + gone.Digest} {
				if err := crane.Delete(ref); err != nil {
					t.Fatal(err)
				}
			}
			o = opts(split, dst)
			o.Shards = shards
			if _, err := Run(ctx, o); !errors.As(err, &se) || !strings.Contains(err.Error(), gone.Source+": ") || !strings.Contains(err.Error(), "missing at the destination") {
				t.Errorf("an image gone from the destination: %v", err)
			}
			if repo, _ := git.PlainOpen(split); repo != nil {
				if _, err := repo.Reference("refs/heads/main", true); err == nil {
					t.Fatal("a refused merge committed")
				}
			}
			// The part run again copies it back; the merge converges.
			o = opts(split, dst)
			o.Shard = shard.Shard{Index: 1, Total: n}
			again, err := Run(ctx, o)
			if err != nil || again.Mirror.Copied() == 0 {
				t.Fatalf("part 1/3 again: %v", err)
			}
		}
		o := opts(split, dst)
		o.Shards = shards
		res, err := Run(ctx, o)
		if err != nil || res.Commit == "" {
			t.Fatalf("N=%d: merge: %v, commit %q", n, err, res.Commit)
		}
		if res.Mirror.Copied() != 0 {
			t.Errorf("N=%d: the merge copied %d images", n, res.Mirror.Copied())
		}
		whole := bare()
		if _, err := Run(ctx, opts(whole, dst)); err != nil {
			t.Fatal(err)
		}
		if a, b := treeOf(t, split), treeOf(t, whole); a != b {
			t.Errorf("N=%d: the merged catalog is tree %s, the run's %s", n, a, b)
		}
	}
	// Parts of two splits together: refused.
	mixed := append(append([]*report.Report{}, results[3][:2]...), results[7][2])
	if _, err := CheckShardResults(mixed, []string{"a.json", "b.json", "c.json"}); err == nil || !strings.Contains(err.Error(), "c.json") {
		t.Errorf("parts of two splits: %v", err)
	}
}
