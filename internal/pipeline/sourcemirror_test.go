package pipeline

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/mirror"
	reg "github.com/operator-publish/publish/internal/registry"
)

// centralMirror is the enclave story's setup: the package repo's source
// registry, a second registry standing in for the enterprise's central
// mirror with copies of every image below /vetted, and the destination.
// It returns the fixture, the central mirror's prefix, the digests of the
// images at the source by reference, and the function that stops the
// source registry.
func centralMirror(t *testing.T) (*fixture, string, map[string]string, func()) {
	t.Helper()
	srcSrv := httptest.NewServer(registry.New(registry.Logger(nopLogger())))
	dstSrv := httptest.NewServer(registry.New(registry.Logger(nopLogger())))
	centralSrv := httptest.NewServer(registry.New(registry.Logger(nopLogger())))
	t.Cleanup(srcSrv.Close)
	t.Cleanup(dstSrv.Close)
	t.Cleanup(centralSrv.Close)
	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	f := &fixture{src: host(srcSrv), dst: host(dstSrv), source: t.TempDir(), catalog: t.TempDir()}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		f.pushVersion(t, v)
	}
	var err error
	if f.repo, err = git.PlainInit(f.source, false); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "add tiny")
	if _, err := git.PlainInit(f.catalog, true); err != nil {
		t.Fatal(err)
	}
	central := host(centralSrv) + "/vetted"
	digests := map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		for _, img := range []string{"bundle", "manager", "worker"} {
			ref := f.src + "/tiny/" + img + ":v" + v
			if err := crane.Copy(ref, central+"/tiny/"+img+":v"+v); err != nil {
				t.Fatal(err)
			}
			d, err := crane.Digest(ref)
			if err != nil {
				t.Fatal(err)
			}
			digests[ref] = d
		}
	}
	return f, central, digests, srcSrv.Close
}

// TestSourceMirrorRun: re-publishing from a central mirror. The source
// registry is stopped; run with --source-mirror SRC=CENTRAL reads every
// image (bundles, lint's image checks, the copy) from the central mirror,
// and the records and the rendered catalog still name the source
// references with their digests.
func TestSourceMirrorRun(t *testing.T) {
	f, central, digests, stopSource := centralMirror(t)
	stopSource()
	res, err := Run(context.Background(), Options{
		Source: f.source,
		Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true,
			SourceMirrors: []reg.SourceMirror{{From: f.src, To: central}}},
		Catalog: catalogOpts(f.catalog),
	})
	if err != nil {
		t.Fatalf("run from the central mirror: %v", err)
	}
	if len(res.Changes.Listed) != 1 {
		t.Errorf("listed %v", res.Changes.Listed)
	}
	state := f.catalogFile(t, "publish/state/global.yaml")
	for ref, d := range digests {
		if strings.Contains(ref, "/bundle:") {
			if !strings.Contains(state, d) {
				t.Errorf("state lacks the bundle digest %s of %s", d, ref)
			}
			continue
		}
		if !strings.Contains(state, "source: "+ref) || !strings.Contains(state, d) {
			t.Errorf("state lacks %s@%s", ref, d)
		}
	}
	if strings.Contains(state, central) {
		t.Errorf("the central mirror leaked into the state:\n%s", state)
	}
	av := f.catalogFile(t, "rendered/global/tiny/artifactversion_tiny.v1.1.0.yaml")
	if av == "" || strings.Contains(av, central) {
		t.Errorf("rendered ArtifactVersion:\n%s", av)
	}
	// What reached the destination is the source's image, by digest.
	d, err := crane.Digest(f.dst + "/mirror/tiny/worker:v1.1.0")
	if err != nil || d != digests[f.src+"/tiny/worker:v1.1.0"] {
		t.Errorf("destination worker digest %s (%v), want %s", d, err, digests[f.src+"/tiny/worker:v1.1.0"])
	}
}

// TestSourceMirrorPackage: package with --source-mirror on a stopped source
// writes an archive whose entries name the source references (the
// central mirror is nowhere in it), and push --catalog at the site
// records them as run does.
func TestSourceMirrorPackage(t *testing.T) {
	f, central, digests, stopSource := centralMirror(t)
	stopSource()
	out := filepath.Join(t.TempDir(), "ops.tgz")
	_, err := Package(t.Context(), PackageOptions{
		Source: f.source, Output: out,
		Mirror: mirror.Options{PlainHTTP: true, SourceMirrors: []reg.SourceMirror{{From: f.src, To: central}}},
	})
	if err != nil {
		t.Fatalf("package from the central mirror: %v", err)
	}
	vr, err := archive.Verify(out, archive.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range vr.Contents.Images {
		if !strings.HasPrefix(im.Ref, f.src+"/") {
			t.Errorf("archive entry %s does not name the source", im.Ref)
		}
		if d := digests[im.Ref]; d != "" && d != im.Desc.Digest.String() {
			t.Errorf("%s: digest %s in the archive, %s at the source", im.Ref, im.Desc.Digest, d)
		}
	}
	res, err := Push(t.Context(), PushOptions{
		Archive: out, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Options: Options{Catalog: catalogOpts(f.catalog)}, TempDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Catalog.Changes.Listed) != 1 {
		t.Errorf("listed %v", res.Catalog.Changes.Listed)
	}
	if state := f.catalogFile(t, "publish/state/global.yaml"); !strings.Contains(state, "source: "+f.src+"/tiny/worker:v1.1.0") || strings.Contains(state, central) {
		t.Errorf("state:\n%s", state)
	}
	if _, err := remote.Head(mustRef(t, f.dst+"/mirror/tiny/bundle:v1.1.0")); err != nil {
		t.Errorf("bundle at the site: %v", err)
	}
}
