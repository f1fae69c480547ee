package planbench

import (
	"context"
	"crypto/tls"
	ckout "github.com/operator-publish/publish/internal/checkout"
	"github.com/operator-publish/publish/internal/target"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	publish "github.com/operator-publish/publish"
	diffbench "github.com/operator-publish/publish/bench/diff"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/render"

	"github.com/operator-publish/publish/internal/testenv"
)

// sourceRegistry serves registry.example.com (the host the generated
// manifests name) from an in-process registry, so that the one bundle the
// plan reads costs no network time: registry calls are excluded from the
// figure, as the benchmark's target says.
func sourceRegistry(b *testing.B) {
	srv := httptest.NewTLSServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	b.Cleanup(srv.Close)
	tr := remote.DefaultTransport.(*http.Transport)
	addr := srv.Listener.Addr().String()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
}

// BenchmarkPlanRun times pipeline.PlanRun, the whole of `publish plan`
// without a destination registry, for one changed version: change
// detection, scan, lint (with the changed bundle read from an in-process
// registry), cloning the catalog (a local bare repo), rendering and the
// diff of rendered/.
func BenchmarkPlanRun(b *testing.B) {
	testenv.Short(b, "generates the benchmark repo")
	for _, p := range []diffbench.Params{{Artifacts: 200, Versions: 5, Commits: 500}, {Artifacts: 2000, Versions: 5, Commits: 5000}} {
		b.Run(p.String(), func(b *testing.B) {
			src := checkout(b, p)
			repo, _ := diffbench.Cached(p)
			sourceRegistry(b)
			art, ver := p.Changed()
			img, err := bundle.Build("../../internal/bundle/testdata/demo")
			if err != nil {
				b.Fatal(err)
			}
			ref, _ := name.ParseReference("registry.example.com/operators/" + art + "-bundle:v" + ver)
			if err := remote.Write(ref, img); err != nil {
				b.Fatal(err)
			}
			catalog := seedCatalog(b, src, repo.Back(1))
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				var log strings.Builder
				plan, err := pipeline.PlanRun(ctx, pipeline.PlanOptions{Options: pipeline.Options{
					Source: src, Catalog: gitops.Options{URL: catalog}, NoFetch: true, Log: slog.New(slog.NewTextHandler(&log, nil)),
					// The in-process registry's certificate is not checked.
					Mirror: mirror.Options{Insecure: true},
				}})
				if err != nil {
					b.Fatal(err)
				}
				if len(plan.Artifacts) != 1 {
					b.Fatalf("plan: %d artifacts change, want 1", len(plan.Artifacts))
				}
				if strings.Contains(log.String(), "reading the whole package repo") {
					b.Fatalf("the plan was not incremental:\n%s", log.String())
				}
			}
		})
	}
}

// seedCatalog makes a bare catalog repo as a publish of the source at
// commit would have left it: every version published (with a bundle
// digest), rendered for the global cluster, its render key recorded.
func seedCatalog(b *testing.B, src, commit string) string {
	bare := filepath.Join(b.TempDir(), "catalog.git")
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
	mc, _ := mirror.New(mirror.Options{DstRegistry: "unmapped.invalid"})
	arts, err := pipeline.Artifacts(pipeline.DestinationOf(mc), model.NewVersions(ms), nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range arts {
		arts[i].Registry, arts[i].Repository = "", ""
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
	if err := ckout.WriteFiles(r.Dir, map[string][]byte{gitops.StatePath("global"): data}); err != nil {
		b.Fatal(err)
	}
	if _, err := r.Commit("seed", time.Now()); err != nil {
		b.Fatal(err)
	}
	if err := r.Push(ctx); err != nil {
		b.Fatal(err)
	}
	return bare
}
