package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/prune"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestPruneAfterDelisting: tiny 1.0.0, 1.1.0 and 1.2.0 are published to
// the Debian registry, then 1.0.0 is delisted by a run. prune plans
// exactly 1.0.0's bundle and two images, apply deletes them, and the
// registry's garbage collection frees their layers; the listed versions
// pull with the digests the state records, and the next run is a no-op.
func TestPruneAfterDelisting(t *testing.T) {
	f := newFixture(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	f.dst = reg.Host
	f.addVersion(t, "1.2.0")
	f.run(t)
	os.RemoveAll(filepath.Join(f.source, "packages", "tiny", "1.0.0"))
	f.commit(t, "delist tiny 1.0.0")
	if res := f.run(t); len(res.Changes.Delisted) != 0 && res.Commit == "" {
		t.Fatalf("the delisting run: %+v", res)
	}
	dir, _, _ := f.cloneCatalog(t)
	parse := func(s string) (name.Reference, error) { return name.ParseReference(s, name.Insecure) }
	p, err := prune.MakePlan(context.Background(), prune.Options{CatalogDir: dir, Now: time.Now(), Parse: parse, Remote: []remote.Option{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 3 {
		t.Fatalf("plan %+v, want tiny 1.0.0's bundle, manager and worker", p.Entries)
	}
	for _, e := range p.Entries {
		if e.At != "present" || len(e.Versions) != 1 || e.Versions[0][:len("global: tiny 1.0.0")] != "global: tiny 1.0.0" {
			t.Errorf("entry %+v", e)
		}
	}
	// A run publishes 1.3.0 meanwhile: the checkout the plan was made in
	// is behind its origin, and apply refuses it with nothing deleted.
	f.addVersion(t, "1.3.0")
	f.run(t)
	var stale *prune.StaleError
	if _, err := prune.Apply(context.Background(), p, prune.ApplyOptions{CatalogDir: dir, Parse: parse}); !errors.As(err, &stale) || !strings.Contains(err.Error(), "pull it") {
		t.Fatalf("apply from a checkout behind its origin: %v", err)
	}
	for _, e := range p.Entries {
		r, _ := parse(e.Repository + "@" + e.Digest)
		if _, err := remote.Head(r); err != nil {
			t.Fatalf("the refused apply deleted %s", r)
		}
	}
	dir, _, _ = f.cloneCatalog(t)
	res, err := prune.Apply(context.Background(), p, prune.ApplyOptions{CatalogDir: dir, Parse: parse})
	if err != nil || len(res.Deleted) != 3 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	for _, e := range p.Entries {
		r, _ := parse(e.Repository + "@" + e.Digest)
		if _, err := remote.Head(r); err == nil {
			t.Errorf("%s is still there", r)
		}
	}
	reg.GarbageCollect(t)
	// Every listed version's images still pull whole, with their digests.
	st, err := os.ReadFile(filepath.Join(dir, "publish", "state", "global.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := prune.MakePlan(context.Background(), prune.Options{CatalogDir: dir, Now: time.Now(), Parse: parse, Remote: []remote.Option{}})
	if err != nil || len(q.Entries) != 0 || len(q.Gone) != 3 || q.Kept != 0 {
		t.Fatalf("plan after: %v, %d entries, %d gone, %d kept (want nothing to delete, the 3 deleted ones gone)", err, len(q.Entries), len(q.Gone), q.Kept)
	}
	if md := q.Markdown(); !strings.Contains(md, "**0 manifests to delete**") || !strings.Contains(md, "3 already gone at the destination") {
		t.Errorf("plan after:\n%s", md)
	}
	for _, v := range []string{"1.1.0", "1.2.0", "1.3.0"} {
		for _, repo := range []string{"bundle", "manager", "worker"} {
			img, err := remote.Image(mustRef(t, reg.Host+"/mirror/tiny/"+repo+":v"+v))
			if err != nil {
				t.Errorf("tiny %s %s: %v", v, repo, err)
				continue
			}
			d, _ := img.Digest()
			if !contains(string(st), d.String()) {
				t.Errorf("tiny %s %s pulls as %s, which the state does not record", v, repo, d)
			}
			ls, _ := img.Layers()
			for _, l := range ls {
				rc, err := l.Compressed()
				if err != nil {
					t.Errorf("tiny %s %s: a layer: %v", v, repo, err)
					continue
				}
				rc.Close()
			}
		}
	}
	if again := f.run(t); again.Commit != "" {
		t.Errorf("the run after the prune committed %s", again.Commit)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
