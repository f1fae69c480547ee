package pipeline

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/operator-publish/publish/internal/mirror"
)

// TestPushCatalogAsRun: an air-gapped site gets an archive and runs
// `publish push --catalog`; its catalog must be byte for byte what
// `publish run` commits for the same package repo and destination.
func TestPushCatalogAsRun(t *testing.T) {
	f := newFixture(t)
	out := filepath.Join(t.TempDir(), "ops.tgz")
	pr, err := Package(t.Context(), PackageOptions{
		Source: f.source, Output: out, Platforms: []string{PlatformsFromSpec},
		Mirror: mirror.Options{PlainHTTP: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Versions != 2 || pr.Manifests != 2 || len(pr.Images) != 6 {
		t.Fatalf("package: %d versions, %d manifests, %d images", pr.Versions, pr.Manifests, len(pr.Images))
	}

	// The reference: publish run into one catalog.
	f.run(t)
	want := f.catalogFile(t, "publish/state/global.yaml")
	wantAV := f.catalogFile(t, "rendered/global/tiny/artifactversion_tiny.v1.1.0.yaml")

	// The site: push --catalog into another, empty catalog.
	site := t.TempDir()
	if _, err := git.PlainInit(site, true); err != nil {
		t.Fatal(err)
	}
	f.catalog = site
	res, err := Push(t.Context(), PushOptions{
		Archive: out, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Options: Options{Catalog: catalogOpts(site)}, TempDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Catalog == nil || res.Catalog.Commit == "" || len(res.Catalog.Changes.Listed) != 1 {
		t.Fatalf("catalog: %+v", res.Catalog)
	}
	if got := f.catalogFile(t, "publish/state/global.yaml"); got != want {
		t.Errorf("state.yaml differs from publish run's:\n%s\nwant:\n%s", got, want)
	}
	if got := f.catalogFile(t, "rendered/global/tiny/artifactversion_tiny.v1.1.0.yaml"); got != wantAV || got == "" {
		t.Errorf("rendered ArtifactVersion differs:\n%s\nwant:\n%s", got, wantAV)
	}
	// Again: everything present, nothing committed.
	res, err = Push(t.Context(), PushOptions{
		Archive: out, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Options: Options{Catalog: catalogOpts(site)}, SkipPush: true,
	})
	if err != nil || res.Catalog.Commit != "" {
		t.Fatalf("rerun: %v %+v", err, res.Catalog)
	}
}

// TestPushCatalogChangedOnly: an archive of the changed versions only keeps
// the versions published before; on a fresh catalog, the versions nobody
// pushed are left out, not refused.
func TestPushCatalogChangedOnly(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	head, _ := f.repo.Head()
	f.addVersion(t, "1.2.0")
	out := filepath.Join(t.TempDir(), "changed.tgz")
	pr, err := Package(t.Context(), PackageOptions{Source: f.source, Output: out, Changed: true, Base: head.Hash().String(), Mirror: mirror.Options{PlainHTTP: true}})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Versions != 1 || pr.Manifests != 3 {
		t.Fatalf("changed: %d versions, %d manifests", pr.Versions, pr.Manifests)
	}
	res, err := Push(t.Context(), PushOptions{
		Archive: out, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Options: Options{Catalog: catalogOpts(f.catalog)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Catalog.Changes.Upgraded; len(got) != 1 || !strings.Contains(got[0], "1.2.0") {
		t.Errorf("upgraded %v", got)
	}
	if s := f.catalogFile(t, "publish/state/global.yaml"); strings.Count(s, "bundleDigest: sha256:") != 3 {
		t.Errorf("state:\n%s", s)
	}
	// A fresh catalog has none of the versions the archive lacks.
	fresh := t.TempDir()
	git.PlainInit(fresh, true)
	res, err = Push(t.Context(), PushOptions{
		Archive: out, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Options: Options{Catalog: catalogOpts(fresh)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Catalog.Changes.Listed; len(got) != 1 {
		t.Errorf("fresh catalog: listed %v", got)
	}
	if got := res.Catalog.Unpublished; len(got) != 2 {
		t.Errorf("fresh catalog: left out %v", got)
	}
	if s := catalogFileOf(t, fresh, "publish/state/global.yaml"); strings.Count(s, "bundleDigest: sha256:") != 1 || !strings.Contains(s, "1.2.0") {
		t.Errorf("fresh catalog state:\n%s", s)
	}
}

// TestPushCatalogSubset: `publish package DIR` of one version, then push
// --catalog: that version is published, every other artifact and version
// of the catalog stays as it is.
func TestPushCatalogSubset(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	before := f.catalogFile(t, "rendered/global/tiny/artifactversion_tiny.v1.0.0.yaml")
	f.addVersion(t, "1.2.0")
	out := filepath.Join(t.TempDir(), "subset.tgz")
	if _, err := Package(t.Context(), PackageOptions{Source: f.source, Output: out, Paths: []string{"packages/tiny/1.2.0"}, Mirror: mirror.Options{PlainHTTP: true}}); err != nil {
		t.Fatal(err)
	}
	res, err := Push(t.Context(), PushOptions{
		Archive: out, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Options: Options{Catalog: catalogOpts(f.catalog)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ch := res.Catalog.Changes
	if len(ch.Upgraded) != 1 || len(ch.Delisted)+len(ch.Listed)+len(ch.Relisted) != 0 {
		t.Errorf("changes %+v", ch)
	}
	if after := f.catalogFile(t, "rendered/global/tiny/artifactversion_tiny.v1.0.0.yaml"); after != before {
		t.Errorf("an unrelated version changed:\n%s\n%s", before, after)
	}
}

// TestPackageCacheDir: --cache makes the second archive from the disk, byte
// for byte the first; a cache that is not an OCI image layout is a usage
// error (exit 2).
func TestPackageCacheDir(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	var sums []string
	for i, name := range []string{"cold.tgz", "warm.tgz"} {
		out := filepath.Join(dir, name)
		pr, err := Package(t.Context(), PackageOptions{Source: f.source, Output: out, Cache: cache, Mirror: mirror.Options{PlainHTTP: true}})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[int]int{0: 0, 1: pr.Blobs}[i]; pr.CachedBlobs != want {
			t.Errorf("%s: %d of %d blobs from the cache, want %d", name, pr.CachedBlobs, pr.Blobs, want)
		}
		sums = append(sums, pr.SHA256)
	}
	if sums[0] != sums[1] {
		t.Errorf("the archive from the cache differs: %s, %s", sums[0], sums[1])
	}
	bad := filepath.Join(dir, "bad")
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "oci-layout"), []byte("not json"), 0o644)
	_, err := Package(t.Context(), PackageOptions{Source: f.source, Output: filepath.Join(dir, "x.tgz"), Cache: bad, Mirror: mirror.Options{PlainHTTP: true}})
	var fe *FlagError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "not an OCI image layout") {
		t.Errorf("bad cache: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.tgz")); !os.IsNotExist(err) {
		t.Errorf("an archive was written despite the error")
	}
	// A cache that cannot be written (its blobs is a file: root writes
	// into read-only directories) is no error: the same archive, and the
	// result says that nothing was added.
	ro := filepath.Join(dir, "ro")
	os.MkdirAll(ro, 0o755)
	os.WriteFile(filepath.Join(ro, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
	os.WriteFile(filepath.Join(ro, "blobs"), nil, 0o644)
	pr, err := Package(t.Context(), PackageOptions{Source: f.source, Output: filepath.Join(dir, "ro.tgz"), Cache: ro, Mirror: mirror.Options{PlainHTTP: true}})
	if err != nil {
		t.Fatalf("unwritable cache: %v", err)
	}
	if pr.SHA256 != sums[0] || pr.CacheAdded != 0 || pr.CacheErr == nil {
		t.Errorf("unwritable cache: same archive %v, %d blobs added, error %v", pr.SHA256 == sums[0], pr.CacheAdded, pr.CacheErr)
	}
}
