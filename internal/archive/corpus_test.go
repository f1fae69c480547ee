package archive_test

import (
	"os"
	"path/filepath"
	"strconv"
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
	checkCorpusSplit(t, source, cache, out, srcOpts, p)
	_ = os.Remove
}

// checkCorpusSplit: the corpus archive split at a size that forces 5+
// parts (from the --cache the archive in one file, whole, filled); a part
// deleted, then a byte flipped in one, is named by verify and push
// (nothing tagged); all parts push the same digests as whole did (one)
// (docker-registry with TLS and auth).
func checkCorpusSplit(t *testing.T, source, cache, whole string, srcOpts mirror.Options, one *archive.PushResult) {
	st, err := os.Stat(whole)
	if err != nil {
		t.Fatal(err)
	}
	partsDir := t.TempDir()
	out := filepath.Join(partsDir, "corpus.tgz")
	maxSize := max(st.Size()/6, 64<<10)
	split, err := pipeline.Package(t.Context(), pipeline.PackageOptions{Source: source, Output: out, Mirror: srcOpts, MaxSize: maxSize, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("archive %s in one file; %d parts of at most %s", archive.Size(st.Size()), len(split.Parts), archive.Size(maxSize))
	if len(split.Parts) < 5 {
		t.Fatalf("%d parts, want 5 or more", len(split.Parts))
	}
	dst := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	push := func(path string, reg *testenv.Registry) (*pipeline.PushResult, error) {
		return pipeline.Push(t.Context(), pipeline.PushOptions{
			Archive: path, TempDir: t.TempDir(),
			Mirror: mirror.Options{DstRegistry: reg.Host + "/airgap", Dst: mirror.Credentials{Username: reg.Username, Password: reg.Password}, CAFile: reg.CAFile},
		})
	}
	// One part missing, then one byte flipped in another: named.
	fourth := filepath.Join(partsDir, split.Parts[3].Name)
	data, _ := os.ReadFile(fourth)
	os.Remove(fourth)
	want := "part 4 of " + strconv.Itoa(len(split.Parts)) + " (" + split.Parts[3].Name + ") is missing"
	if _, err := archive.Verify(partsDir, archive.Limits{}, nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("verify without part 4: %v", err)
	}
	if _, err := push(archive.PartsPath(out), dst); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("push without part 4: %v", err)
	}
	os.WriteFile(fourth, data, 0o644)
	second := filepath.Join(partsDir, split.Parts[1].Name)
	good, _ := os.ReadFile(second)
	bad := append([]byte(nil), good...)
	bad[len(bad)/3] ^= 0x08
	os.WriteFile(second, bad, 0o644)
	want = second + " (part 2 of " + strconv.Itoa(len(split.Parts)) + ")"
	if _, err := archive.Verify(partsDir, archive.Limits{}, nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("verify with a byte flipped in part 2: %v", err)
	}
	if _, err := push(partsDir, dst); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("push with a byte flipped in part 2: %v", err)
	}
	os.WriteFile(second, good, 0o644)
	// All parts: the digests of the archive in one file.
	a, err := push(partsDir, dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Push.Images) != len(one.Images) {
		t.Fatalf("split: %d images, one file: %d", len(a.Push.Images), len(one.Images))
	}
	for i := range a.Push.Images {
		x, y := a.Push.Images[i], one.Images[i]
		if x.Source != y.Source || x.Digest != y.Digest {
			t.Errorf("split %s %s, one file %s %s", x.Source, x.Digest, y.Source, y.Digest)
			continue
		}
		ra, _ := name.ParseReference(x.Destination)
		d, err := remote.Head(ra, dst.Options()...)
		if err != nil || d.Digest.String() != x.Digest {
			t.Errorf("%s at the destination: %v %v", x.Destination, d, err)
		}
	}
	t.Logf("%d images pushed from the parts with the digests of the archive in one file", len(a.Push.Images))
}
