package archive_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestCorpusThroughArchive: every bundle of the shared corpus, re-hosted in
// a Debian docker-registry with TLS and auth, goes through an archive into
// a fresh docker-registry with TLS and auth; every image arrives with its
// source digest. Packaging again, through an empty and then a full --cache,
// gives the same bytes.
func TestCorpusThroughArchive(t *testing.T) {
	testenv.Short(t, "integration test: docker-registry and the shared corpus")
	shared := testenv.RequireShared(t)
	src := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	source := t.TempDir()
	corpus, err := testenv.BuildCorpus(t.Context(), filepath.Join(shared, "corpus"), src.Host, filepath.Join(source, "packages"), src.Options()...)
	if err != nil {
		t.Fatalf("building the corpus: %v", err)
	}
	srcOpts := mirror.Options{Src: mirror.Credentials{Username: src.Username, Password: src.Password}, CAFile: src.CAFile}
	var sums []string
	out := ""
	cache := filepath.Join(t.TempDir(), "cache")
	for i := range 3 {
		out = filepath.Join(t.TempDir(), "corpus.tgz")
		o := pipeline.PackageOptions{Source: source, Output: out, Mirror: srcOpts}
		if i > 0 {
			o.Cache = cache
		}
		res, err := pipeline.Package(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			t.Logf("package: %d versions, %d images, %d manifests, %d blobs, %s of blobs, archive %s", res.Versions, len(res.Images), res.PackageResult.Manifests, res.Blobs, archive.Size(res.BlobBytes), archive.Size(res.Bytes))
		}
		if res.Versions != len(corpus.Packages) {
			t.Fatalf("%d versions packaged of %d", res.Versions, len(corpus.Packages))
		}
		if i == 2 && res.CachedBlobs != res.Blobs {
			t.Errorf("full cache: %d of %d blobs from it", res.CachedBlobs, res.Blobs)
		}
		sums = append(sums, res.SHA256)
	}
	if sums[0] != sums[1] || sums[0] != sums[2] {
		t.Errorf("runs (no cache, empty cache, full cache) gave different archives: %v", sums)
	}
	if _, err := archive.Verify(out, archive.Limits{}, nil); err != nil {
		t.Fatal(err)
	}

	dst := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	push := func(creds mirror.Credentials, noAuth bool) (*pipeline.PushResult, error) {
		return pipeline.Push(t.Context(), pipeline.PushOptions{
			Archive: out, NoAuth: noAuth, TempDir: t.TempDir(),
			Mirror: mirror.Options{DstRegistry: dst.Host + "/airgap", Dst: creds, CAFile: dst.CAFile},
		})
	}
	// Wrong credentials: a clear error, nothing reported as pushed.
	if res, err := push(mirror.Credentials{Username: dst.Username, Password: "wrong"}, false); err == nil || res != nil || !strings.Contains(err.Error(), "refused the credentials (401)") {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := push(mirror.Credentials{}, true); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("--no-auth: %v", err)
	}
	res, err := push(mirror.Credentials{Username: dst.Username, Password: dst.Password}, false)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Push
	t.Logf("push: %d images, %d blobs pushed (%s), %d mounted, %d skipped", len(p.Images), p.BlobsPushed, archive.Size(p.BytesPushed), p.BlobsMounted, p.BlobsSkipped)
	dstByRef := map[string]string{}
	for _, im := range p.Images {
		dstByRef[im.Source] = im.Destination
	}
	head := func(ref string, opts []remote.Option) string {
		t.Helper()
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		d, err := remote.Head(r, opts...)
		if err != nil {
			t.Errorf("%s: %v", ref, err)
			return ""
		}
		return d.Digest.String()
	}
	checked := 0
	for _, pkg := range corpus.Packages {
		for _, ref := range append([]string{pkg.BundleRef}, pkg.RelatedImages...) {
			d, ok := dstByRef[ref]
			if !ok {
				t.Errorf("%s was not pushed", ref)
				continue
			}
			if !strings.HasPrefix(d, dst.Host+"/airgap/") {
				t.Errorf("%s mapped to %s", ref, d)
			}
			if s, g := head(ref, src.Options()), head(d, dst.Options()); s != g || s == "" {
				t.Errorf("%s: source %s, destination %s", ref, s, g)
			}
			checked++
		}
		if got := head(dstByRef[pkg.BundleRef], dst.Options()); got != pkg.BundleDigest {
			t.Errorf("bundle %s: %s at the destination, built %s", pkg.BundleRef, got, pkg.BundleDigest)
		}
	}
	t.Logf("%d references checked, digests equal", checked)
	// A second push finds everything there.
	res, err = push(mirror.Credentials{Username: dst.Username, Password: dst.Password}, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Push.BlobsPushed != 0 {
		t.Errorf("second push uploaded %d blobs", res.Push.BlobsPushed)
	}
	_ = os.Remove
}
