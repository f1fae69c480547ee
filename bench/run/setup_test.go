// Package runbench measures `publish run` for one changed version in the
// generated package repos of bench/diff (200 × 5 over 500 commits and
// 2,000 × 5 over 5,000 commits), against a local bare catalog that a
// previous publish left, with the changed bundle and its images served by
// an in-process registry whose busy time is subtracted (registry time
// excluded). BenchmarkRun times today's pipeline.Run; BenchmarkCommitPush
// the commit written from Git objects and its push (internal/catalog),
// the push timed on its own. See README.md for the figures.
package runbench

import (
	"context"
	"crypto/tls"
	"fmt"
	"github.com/operator-publish/publish/internal/checkout"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/target"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	publish "github.com/operator-publish/publish"
	diffbench "github.com/operator-publish/publish/bench/diff"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/render"
)

// sizes are the two generated repos: the cost must grow with the change,
// not with the repo.
var sizes = []diffbench.Params{{Artifacts: 200, Versions: 5, Commits: 500}, {Artifacts: 2000, Versions: 5, Commits: 5000}}

// setupVersion changes when what setup caches changes.
const setupVersion = 3

// source returns a checkout of the generated package repo for p (cached
// under os.TempDir(), shared with bench/plan).
func source(b *testing.B, p diffbench.Params) (string, *diffbench.Repo) {
	repo, err := diffbench.Cached(p)
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(os.TempDir(), "publish-planbench-"+p.String())
	if _, err := os.Stat(filepath.Join(dir, "packages")); err != nil {
		os.RemoveAll(dir)
		if out, err := exec.Command("git", "clone", "-q", repo.Dir, dir).CombinedOutput(); err != nil {
			b.Fatalf("git clone: %v\n%s", err, out)
		}
	}
	return dir, repo
}

// busyTime sums the wall time during which at least one request is being
// served: the registry time that the figures exclude.
type busyTime struct {
	mu     sync.Mutex
	active int
	since  time.Time
	total  time.Duration
}

func (t *busyTime) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.mu.Lock()
		if t.active == 0 {
			t.since = time.Now()
		}
		t.active++
		t.mu.Unlock()
		defer func() {
			t.mu.Lock()
			t.active--
			if t.active == 0 {
				t.total += time.Since(t.since)
			}
			t.mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}

// take returns the busy time so far and resets it.
func (t *busyTime) take() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.total
	t.total = 0
	return d
}

// registries serves every registry host (the source registry.example.com,
// quay.io and docker.io that the bundle's CSV names, and the destination)
// from one in-process registry over HTTPS (its certificate unchecked): every dial of
// go-containerregistry's default transport, which the mirror client
// clones, goes to it. It pushes the changed version's bundle and images
// and returns the clock of the registry's busy time.
func registries(b *testing.B, p diffbench.Params) *busyTime {
	busy := &busyTime{}
	srv := httptest.NewTLSServer(busy.wrap(registry.New(registry.Logger(log.New(io.Discard, "", 0)))))
	b.Cleanup(srv.Close)
	tr := remote.DefaultTransport.(*http.Transport)
	addr := srv.Listener.Addr().String()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	art, ver := p.Changed()
	related := []string{
		"registry.example.com/operators/" + art + "-controller:v" + ver,
		"registry.example.com/operators/" + art + "-operand:v" + ver,
		"registry.example.com/library/kube-rbac-proxy:v0.18.0",
	}
	var containers strings.Builder
	for i, r := range related {
		fmt.Fprintf(&containers, "              - {name: c%d, image: %s}\n", i, r)
	}
	csv := strings.NewReplacer("OP", art, "VER", ver, "CONTAINERS", containers.String()).Replace(csvTemplate)
	ann := "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: " + art + "\n  operators.operatorframework.io.bundle.channels.v1: stable\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n"
	img, err := bundle.LayerImage(map[string][]byte{
		"manifests/" + art + ".clusterserviceversion.yaml": []byte(csv),
		"metadata/annotations.yaml":                        []byte(ann),
	}, map[string]string{"operators.operatorframework.io.bundle.package.v1": art})
	if err != nil {
		b.Fatal(err)
	}
	ref, _ := name.ParseReference("registry.example.com/operators/" + art + "-bundle:v" + ver)
	if err := remote.Write(ref, img); err != nil {
		b.Fatal(err)
	}
	for _, r := range related {
		r, err := name.ParseReference(r)
		if err != nil {
			b.Fatal(err)
		}
		ri, err := random.Image(1024, 1)
		if err != nil {
			b.Fatal(err)
		}
		if err := remote.Write(r, ri); err != nil {
			b.Fatalf("push %s: %v", r, err)
		}
	}
	busy.take()
	return busy
}

// csvTemplate is the changed version's CSV: a clean bundle (lint passes)
// whose containers are the manifest's relatedImages.
const csvTemplate = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: OP.vVER
  annotations:
    description: Benchmark operator OP.
spec:
  displayName: OP
  version: VER
  provider: {name: Bench}
  install:
    strategy: deployment
    spec:
      deployments:
      - name: OP-controller
        spec:
          selector: {matchLabels: {app: OP}}
          template:
            metadata: {labels: {app: OP}}
            spec:
              containers:
CONTAINERS  installModes:
  - {type: AllNamespaces, supported: true}
`

// dstRegistry is the destination of the runs (--dst-registry); the seeded
// catalog maps its artifacts to it, as the publish that left it did.
const dstRegistry = "dst.example.com/mirror"

// seeded is a bare catalog repo as a publish of the source at Back(1)
// to dstRegistry left it: every version published (with a bundle digest), rendered for
// the global cluster, its render key recorded; then History commits that
// each change one small file (history/log.txt), so that the catalog has a
// history as long as the package repo's.
type seeded struct {
	Bare string
	Head plumbing.Hash // the branch tip to reset to before every iteration
}

// catalogFor returns the seeded catalog for p, cached under os.TempDir()
// (seeding renders every artifact through kustomize).
func catalogFor(b *testing.B, p diffbench.Params, src, commit string) *seeded {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("publish-runbench-catalog-s%d-a%d-v%d-c%d", setupVersion, p.Artifacts, p.Versions, p.Commits))
	if s, err := loadSeeded(dir); err == nil {
		return s
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "publish-runbench-tmp-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	seedCatalog(b, tmp, src, commit, p.Commits)
	b.Logf("catalog %s seeded in %s", dir, time.Since(start).Round(time.Millisecond))
	if err := os.Rename(tmp, dir); err != nil {
		b.Fatal(err)
	}
	s, err := loadSeeded(dir)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

const seedHeadFile = "publish-runbench-head" // inside the bare repo: no ref, no object

func loadSeeded(dir string) (*seeded, error) {
	data, err := os.ReadFile(filepath.Join(dir, seedHeadFile))
	if err != nil {
		return nil, err
	}
	return &seeded{Bare: dir, Head: plumbing.NewHash(strings.TrimSpace(string(data)))}, nil
}

// reset points the catalog branch back at the seeded tip (the objects of
// earlier iterations stay, unreachable, as on a real server).
func (s *seeded) reset(b *testing.B) {
	r, err := git.PlainOpen(s.Bare)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", s.Head)); err != nil {
		b.Fatal(err)
	}
}

func seedCatalog(b *testing.B, bare, src, commit string, history int) {
	if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", bare).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v\n%s", err, out)
	}
	ctx := context.Background()
	r, err := gitops.Clone(ctx, gitops.Options{URL: bare})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if err := r.Seed(publish.CatalogTemplate, "catalog-repo-template"); err != nil {
		b.Fatal(err)
	}
	ms, err := manifest.Scan(src, filepath.Join(src, "packages"))
	if err != nil {
		b.Fatal(err)
	}
	mc, _ := mirror.New(mirror.Options{DstRegistry: dstRegistry})
	arts, err := pipeline.Artifacts(benchMapper{mc}, model.NewVersions(ms), nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range arts {
		for j := range arts[i].Versions {
			arts[i].Versions[j].BundleDigest = "sha256:" + strings.Repeat("0", 64)
		}
	}
	arts = render.Merge(nil, arts)
	key, err := target.RenderIntoDir(r.Dir, "global", render.Config{}, arts, "")
	if err != nil {
		b.Fatal(err)
	}
	st := &gitops.State{Source: gitops.Source{Commit: commit}, Artifacts: arts, Rendered: map[string]string{"global": key}}
	data, err := st.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	if err := checkout.WriteFiles(r.Dir, map[string][]byte{gitops.StatePath("global"): data}); err != nil {
		b.Fatal(err)
	}
	if _, err := r.Commit("seed", time.Now()); err != nil {
		b.Fatal(err)
	}
	if err := r.Push(ctx); err != nil {
		b.Fatal(err)
	}
	// The history, written from objects and pushed in one pack. Its file
	// lies below publish/, which the render key leaves out as it does
	// publish's own commits; a file anywhere else may be an overlay's input
	// and would change the key (and make every run render everything).
	tip, err := catalog.OpenTip(ctx, gitops.Options{URL: bare})
	if err != nil {
		b.Fatal(err)
	}
	defer tip.Close()
	parent := plumbing.NewHash(tip.Head())
	all := &catalog.Written{Parent: parent}
	when := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range history {
		w, err := catalog.WriteCommit(tip.Storer(), parent, "", []catalog.Change{{Path: "publish/history/log.txt", Data: fmt.Appendf(nil, "publish %d\n", i)}},
			catalog.CommitOptionsFor(gitops.Options{}, fmt.Sprintf("publish %d", i), when.Add(time.Duration(i)*time.Minute)))
		if err != nil {
			b.Fatal(err)
		}
		all.Objects = append(all.Objects, w.Objects...)
		all.Commit, parent = w.Commit, w.Commit
	}
	if _, err := catalog.PushCommit(ctx, catalog.Remote{URL: bare, Branch: "main"}, tip.Storer(), all); err != nil {
		b.Fatal(err)
	}
	// One pack, as a server that ran gc holds it.
	if out, err := exec.Command("git", "-C", bare, "gc", "-q").CombinedOutput(); err != nil {
		b.Fatalf("git gc: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(bare, seedHeadFile), []byte(all.Commit.String()+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
}

// benchMapper maps repositories as --dst-registry does.
type benchMapper struct{ mc *mirror.Client }

func (m benchMapper) MapRepository(src string) (string, string, error) {
	ref, err := m.mc.ParseReference(src)
	if err != nil {
		return "", "", err
	}
	d, err := m.mc.Destination(ref)
	if err != nil {
		return "", "", err
	}
	return d.Context().RegistryStr(), d.Context().RepositoryStr(), nil
}
