package runbench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
)

// pushStore is a go-git storage whose objects are the catalog's (the bare
// repo read in place, plus the new commit in memory) and whose refs and
// config are in memory, so that go-git's Remote.Push can be timed on the
// same commit without touching the catalog but by the push.
type pushStore struct {
	*memory.Storage
	obj storer.EncodedObjectStorer
}

func (s *pushStore) NewEncodedObject() plumbing.EncodedObject { return s.obj.NewEncodedObject() }
func (s *pushStore) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	return s.obj.SetEncodedObject(o)
}
func (s *pushStore) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	return s.obj.EncodedObject(t, h)
}
func (s *pushStore) IterEncodedObjects(t plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	return s.obj.IterEncodedObjects(t)
}
func (s *pushStore) HasEncodedObject(h plumbing.Hash) error { return s.obj.HasEncodedObject(h) }
func (s *pushStore) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	return s.obj.EncodedObjectSize(h)
}

// BenchmarkGoGitPush is the figure PushCommit replaces: the same commit
// as BenchmarkCommitPush (written from objects, untimed), pushed with
// go-git's Remote.Push, which works out what to send by walking every
// object reachable from the remote refs (for a local remote, read from
// the remote's own storage): its cost grows with the catalog's history
// and tree. push-ms is the push alone.
func BenchmarkGoGitPush(b *testing.B) {
	if testing.Short() {
		b.Skip("generating the benchmark repos is skipped under -short")
	}
	for _, p := range sizes {
		b.Run(p.String(), func(b *testing.B) {
			src, repo := source(b, p)
			cat := catalogFor(b, p, src, repo.Back(1))
			art, _ := p.Changed()
			ctx := context.Background()
			o := gitops.Options{URL: cat.Bare}
			var tPush time.Duration
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				cat.reset(b)
				tip, err := catalog.OpenTip(ctx, o)
				if err != nil {
					b.Fatal(err)
				}
				dir := "rendered/global/" + art
				fs, err := tip.Files(dir, nil)
				if err != nil {
					b.Fatal(err)
				}
				for p, data := range fs {
					fs[p] = append(data, fmt.Sprintf("# go-git run %d %d\n", i, time.Now().UnixNano())...)
				}
				w, err := tip.Commit(catalog.Replace([]string{dir}, fs), catalog.CommitOptionsFor(o, "publish one version", time.Now()))
				if err != nil || w.Commit.IsZero() {
					b.Fatalf("commit: %v", err)
				}
				st := &pushStore{Storage: memory.NewStorage(), obj: tip.Storer()}
				if err := st.SetReference(plumbing.NewHashReference("refs/heads/main", w.Commit)); err != nil {
					b.Fatal(err)
				}
				if err := st.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, "refs/heads/main")); err != nil {
					b.Fatal(err)
				}
				r, err := git.Open(st, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{cat.Bare}}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				err = r.PushContext(ctx, &git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{"refs/heads/main:refs/heads/main"}})
				tPush += time.Since(t0)
				b.StopTimer()
				tip.Close()
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(tPush/time.Duration(b.N))/1e6, "push-ms")
		})
	}
}
