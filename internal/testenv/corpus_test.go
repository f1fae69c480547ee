package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// corpusOrSkip returns the corpus directory or skips the test.
func corpusOrSkip(t *testing.T) string {
	t.Helper()
	dir, ok := CorpusDir()
	if !ok {
		Skipf(t, "test corpus not found (looked at %q; it is <module root>/../shared/corpus, or set %s)", dir, CorpusDirEnv)
	}
	return dir
}

// corpusBundleDirsOnDisk counts the bundle directories of the corpus straight
// from the file system: community-operators/<pkg>/<ver>/ and
// packagemanifests/<pkg>/<ver>/.
func corpusBundleDirsOnDisk(t *testing.T, corpusDir string) []string {
	t.Helper()
	var dirs []string
	for _, pattern := range []string{"community-operators/*/*/manifests", "packagemanifests/*/*/"} {
		ms, err := filepath.Glob(filepath.Join(corpusDir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if st, err := os.Stat(m); err != nil || !st.IsDir() {
				continue
			}
			if strings.HasSuffix(pattern, "/manifests") {
				m = filepath.Dir(m)
			}
			dirs = append(dirs, filepath.Clean(m))
		}
	}
	slices.Sort(dirs)
	return dirs
}

// splitCorpusErr checks that err only reports duplicate package versions and
// returns the directories involved.
func splitCorpusErr(t *testing.T, err error) map[string]bool {
	t.Helper()
	dupDirs := map[string]bool{}
	if err == nil {
		return dupDirs
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var dup *DuplicateBundleError
		if !errors.As(e, &dup) {
			t.Errorf("BuildCorpus: %v", e)
			continue
		}
		t.Logf("expected corpus defect: %v", dup)
		if len(dup.Dirs) < 2 {
			t.Errorf("duplicate error with %d dirs: %v", len(dup.Dirs), dup)
		}
		for _, d := range dup.Dirs {
			if !strings.Contains(e.Error(), d) {
				t.Errorf("duplicate error does not name %s: %v", d, e)
			}
			dupDirs[d] = true
		}
	}
	return dupDirs
}

func TestBuildCorpus(t *testing.T) {
	Short(t, "builds every bundle image of the corpus")
	corpusDir := corpusOrSkip(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	start := time.Now()
	root := t.TempDir()
	c, err := BuildCorpus(ctx, corpusDir, host, root)
	t.Logf("BuildCorpus: %d bundles in %v", len(c.Packages), time.Since(start))
	dupDirs := splitCorpusErr(t, err)

	// Every bundle directory yields exactly one package (except those
	// reported as duplicates, which must exist on disk).
	onDisk := corpusBundleDirsOnDisk(t, corpusDir)
	if len(onDisk) == 0 {
		t.Fatalf("no bundle directory found in %s", corpusDir)
	}
	for d := range dupDirs {
		if !slices.Contains(onDisk, d) {
			t.Errorf("duplicate error names %s, not a bundle directory", d)
		}
	}
	byDir := map[string]CorpusPackage{}
	for _, p := range c.Packages {
		if _, ok := byDir[p.Dir]; ok {
			t.Errorf("two packages from %s", p.Dir)
		}
		byDir[p.Dir] = p
	}
	for _, d := range onDisk {
		_, ok := byDir[d]
		switch {
		case dupDirs[d] && ok:
			t.Errorf("%s is reported as duplicate but was built", d)
		case !dupDirs[d] && !ok:
			t.Errorf("%s yields no package", d)
		}
	}
	if want := len(onDisk) - len(dupDirs); len(c.Packages) != want {
		t.Errorf("got %d packages, want %d", len(c.Packages), want)
	}
	if !slices.IsSortedFunc(c.Packages, func(a, b CorpusPackage) int {
		if a.Package != b.Package {
			return strings.Compare(a.Package, b.Package)
		}
		if corpusVersionLess(a.Version, b.Version) {
			return -1
		}
		return 1
	}) {
		t.Errorf("packages not sorted by package, version")
	}

	start = time.Now()
	corpusParallel(len(c.Packages), func(i int) {
		checkCorpusPackage(t, host, root, c.Packages[i])
	})
	t.Logf("checked the bundle images in %v", time.Since(start))

	// Rerun: same digests.
	start = time.Now()
	c2, err := BuildCorpus(ctx, corpusDir, host, t.TempDir())
	t.Logf("second BuildCorpus in %v", time.Since(start))
	splitCorpusErr(t, err)
	if len(c2.Packages) != len(c.Packages) {
		t.Fatalf("second run: %d packages, first %d", len(c2.Packages), len(c.Packages))
	}
	for i := range c.Packages {
		a, b := c.Packages[i], c2.Packages[i]
		if a.BundleRef != b.BundleRef || a.BundleDigest != b.BundleDigest || !slices.Equal(a.RelatedImages, b.RelatedImages) {
			t.Errorf("second run differs for %s:\n first %s@%s %v\nsecond %s@%s %v",
				a.Dir, a.BundleRef, a.BundleDigest, a.RelatedImages, b.BundleRef, b.BundleDigest, b.RelatedImages)
		}
	}
}

// checkCorpusPackage pulls the bundle image of p, checks its CSV only points
// at host and that every stand-in resolves, and checks the manifest file.
func checkCorpusPackage(t *testing.T, host, root string, p CorpusPackage) {
	t.Helper()
	if want := host + "/bundles/" + p.Package + ":v" + p.Version; p.BundleRef != want {
		t.Errorf("%s: BundleRef %s, want %s", p.Dir, p.BundleRef, want)
	}
	ref, err := name.ParseReference(p.BundleRef)
	if err != nil {
		t.Errorf("%s: %v", p.Dir, err)
		return
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Errorf("%s: pulling bundle: %v", p.Dir, err)
		return
	}
	if dg, _ := img.Digest(); dg.String() != p.BundleDigest {
		t.Errorf("%s: registry has %s, BuildCorpus says %s", p.Dir, dg, p.BundleDigest)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Errorf("%s: bundle config: %v", p.Dir, err)
		return
	}
	if l := cf.Config.Labels; l["operators.operatorframework.io.bundle.package.v1"] != p.Package ||
		l["operators.operatorframework.io.bundle.mediatype.v1"] != "registry+v1" ||
		l["operators.operatorframework.io.bundle.manifests.v1"] != "manifests/" ||
		l["operators.operatorframework.io.bundle.channels.v1"] == "" {
		t.Errorf("%s: bundle labels %v", p.Dir, l)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Errorf("%s: bundle layers: %d, %v", p.Dir, len(layers), err)
		return
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Errorf("%s: %v", p.Dir, err)
		return
	}
	defer rc.Close()
	var csvs []*v1alpha1.ClusterServiceVersion
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Errorf("%s: reading bundle layer: %v", p.Dir, err)
			return
		}
		if h.Typeflag != tar.TypeReg || !strings.HasPrefix(h.Name, "manifests/") {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Errorf("%s: %v", p.Dir, err)
			return
		}
		var csv v1alpha1.ClusterServiceVersion
		if utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&csv) == nil && csv.Kind == v1alpha1.ClusterServiceVersionKind {
			csvs = append(csvs, &csv)
		}
	}
	if len(csvs) != 1 {
		t.Errorf("%s: bundle image has %d CSVs, want 1", p.Dir, len(csvs))
		return
	}
	refs := corpusCSVImages(csvs[0])
	if len(refs) == 0 {
		t.Errorf("%s: CSV references no image", p.Dir)
	}
	for _, r := range refs {
		if !strings.HasPrefix(r, host+"/") {
			t.Errorf("%s: CSV still references %s", p.Dir, r)
		}
	}
	if !slices.Equal(refs, p.RelatedImages) {
		t.Errorf("%s: CSV references %v, RelatedImages %v", p.Dir, refs, p.RelatedImages)
	}
	for _, r := range p.RelatedImages {
		sref, err := name.ParseReference(r, name.StrictValidation)
		if err != nil {
			t.Errorf("%s: stand-in %s: %v", p.Dir, r, err)
			continue
		}
		desc, err := remote.Head(sref)
		if err != nil {
			t.Errorf("%s: stand-in %s does not resolve: %v", p.Dir, r, err)
			continue
		}
		if d, ok := sref.(name.Digest); ok && desc.Digest.String() != d.DigestStr() {
			t.Errorf("%s: %s resolves to %s", p.Dir, r, desc.Digest)
		}
	}

	// The PackageManifest file.
	if want := filepath.Join(root, p.Package, p.Version, "manifest.yaml"); p.ManifestPath != want {
		t.Errorf("%s: ManifestPath %s, want %s", p.Dir, p.ManifestPath, want)
	}
	data, err := os.ReadFile(p.ManifestPath)
	if err != nil {
		t.Errorf("%s: %v", p.Dir, err)
		return
	}
	var pm corpusPackageManifest
	if err := yaml.UnmarshalStrict(data, &pm); err != nil {
		t.Errorf("%s: %s: %v", p.Dir, p.ManifestPath, err)
		return
	}
	if pm.APIVersion != "app.alauda.cn/v1beta1" || pm.Kind != "PackageManifest" ||
		pm.Metadata.Name != p.Package+".v"+p.Version || pm.Spec.Type != "bundle" ||
		pm.Spec.Artifact != p.BundleRef || pm.Spec.Version != "v"+p.Version ||
		!slices.Equal(pm.Spec.Arch, []string{"linux/amd64"}) || pm.Spec.Info.DisplayName == "" ||
		!slices.Equal(pm.Spec.RelatedImages, p.RelatedImages) {
		t.Errorf("%s: unexpected %s:\n%s", p.Dir, p.ManifestPath, data)
	}
	if len(csvs[0].Spec.Icon) > 0 && pm.Spec.Info.Icon != csvs[0].Spec.Icon[0].Data {
		t.Errorf("%s: manifest icon is not the CSV's first icon", p.Dir)
	}
}

func TestCorpusReplaceRefs(t *testing.T) {
	repl := map[string]string{
		"quay.io/a/b":                  "h/a/b:latest",
		"quay.io/a/b:v1":               "h/a/b:v1",
		"b":                            "h/library/b:latest",
		"quay.io/a/b@sha256:0123":      "h/a/b@sha256:9999",
		"quay.io/sosivio/draingo@":     "h/sosivio/draingo:latest",
		"docker.io/mattermost/mm:v0.5": "h/mattermost/mm:v0.5",
		"mattermost/mm:v0.5":           "h/mattermost/mm:v0.5",
	}
	in := `image: quay.io/a/b:v1
x: "quay.io/a/b"
y: quay.io/a/b:v1.2
z: quay.io/a/b-c:v1, quay.io/a/b@sha256:0123
w: --image=quay.io/a/b:v1.
v: b
u: quay.io/sosivio/draingo@
t: docker.io/mattermost/mm:v0.5 mattermost/mm:v0.5 oci://quay.io/a/b
`
	want := `image: h/a/b:v1
x: "h/a/b:latest"
y: quay.io/a/b:v1.2
z: quay.io/a/b-c:v1, h/a/b@sha256:9999
w: --image=h/a/b:v1.
v: h/library/b:latest
u: h/sosivio/draingo:latest
t: h/mattermost/mm:v0.5 h/mattermost/mm:v0.5 oci://quay.io/a/b
`
	got, hits := corpusReplaceRefs([]byte(in), repl)
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if len(hits) != len(repl) {
		t.Errorf("hits %v", hits)
	}
}

func TestCorpusParseImageRef(t *testing.T) {
	for _, tc := range []struct {
		in, path, tag string
		pinned        bool
	}{
		{"busybox", "library/busybox", "latest", false},
		{"memcached:1.5", "library/memcached", "1.5", false},
		{"docker.io/mattermost/mattermost-operator:v0.5.0", "mattermost/mattermost-operator", "v0.5.0", false},
		{"localhost:5000/Foo/Bar_baz", "foo/bar_baz", "latest", false},
		{"quay.io/a/b:v1@sha256:7dc60d7777e010c50f5e041ff069112b379c3d5eef2823d20871c67cf663f10c", "a/b", "v1", true},
		{"quay.io/a/b@sha256:7dc60d7777e010c50f5e041ff069112b379c3d5eef2823d20871c67cf663f10c", "a/b", "latest", true},
		{"quay.io/sosivio/draingo@", "sosivio/draingo", "latest", false},
		{"docker.io/apache/camel-k:1.0.0-RC1", "apache/camel-k", "1.0.0-RC1", false},
		{"oci://quay.io/kuadrant/wasm-shim:v0.5.0", "kuadrant/wasm-shim", "v0.5.0", false},
	} {
		path, tag, pinned, err := corpusParseImageRef(tc.in)
		if err != nil || path != tc.path || tag != tc.tag || pinned != tc.pinned {
			t.Errorf("%s: got %s %s %v %v, want %s %s %v", tc.in, path, tag, pinned, err, tc.path, tc.tag, tc.pinned)
		}
	}
	for _, bad := range []string{"", "${IMAGE}", "a b"} {
		if _, _, _, err := corpusParseImageRef(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestCorpusSyntheticErrors runs BuildCorpus on a small corpus made here: a
// good bundle, one without package annotation, two bundles with the same
// version and a package-manifest package without defaultChannel.
func TestCorpusSyntheticErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(p, content string) {
		t.Helper()
		p = filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	csv := func(name, version, image string) string {
		return `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: ` + name + `
  annotations:
    containerImage: ` + image + `
spec:
  version: ` + version + `
  install:
    strategy: deployment
    spec:
      deployments:
      - name: op
        spec:
          template:
            spec:
              containers:
              - name: op
                image: ` + image + `
                env:
                - name: RELATED_IMAGE_X
                  value: busybox
`
	}
	ann := func(pkg string) string {
		return "annotations:\n  operators.operatorframework.io.bundle.package.v1: " + pkg +
			"\n  operators.operatorframework.io.bundle.channels.v1: alpha\n" +
			"  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n" +
			"  operators.operatorframework.io.bundle.manifests.v1: manifests/\n"
	}
	write("community-operators/good/1.0.0/manifests/csv.yaml", csv("good.v1.0.0", "1.0.0", "quay.io/Org/Good:v1"))
	write("community-operators/good/1.0.0/metadata/annotations.yaml", ann("good"))
	write("community-operators/nopkg/1.0.0/manifests/csv.yaml", csv("nopkg.v1.0.0", "1.0.0", "quay.io/org/nopkg:v1"))
	write("community-operators/nopkg/1.0.0/metadata/annotations.yaml", "annotations: {}\n")
	for _, v := range []string{"2.0.0", "2.0.1"} {
		write("community-operators/dup/"+v+"/manifests/csv.yaml", csv("dup.v2.0.0", "2.0.0", "quay.io/org/dup:v2"))
		write("community-operators/dup/"+v+"/metadata/annotations.yaml", ann("dup"))
	}
	// Same CSV version and no version in the directory names: a true duplicate.
	for _, d := range []string{"a", "b"} {
		write("community-operators/twin/"+d+"/manifests/csv.yaml", csv("twin.v3.0.0", "3.0.0", "quay.io/org/twin:v3"))
		write("community-operators/twin/"+d+"/metadata/annotations.yaml", ann("twin"))
	}
	write("packagemanifests/old/old.package.yaml", "channels:\n- currentCSV: old.v0.2.0\n  name: beta\npackageName: old\n")
	write("packagemanifests/old/0.1.0/old.v0.1.0.clusterserviceversion.yaml", csv("old.v0.1.0", "0.1.0", "docker.io/org/old@sha256:7dc60d7777e010c50f5e041ff069112b379c3d5eef2823d20871c67cf663f10c"))
	write("packagemanifests/old/0.2.0/old.v0.2.0.clusterserviceversion.yaml", csv("old.v0.2.0", "0.2.0", "org/old:0.2.0"))

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	root := t.TempDir()
	c, err := BuildCorpus(context.Background(), dir, host, root)
	if err == nil {
		t.Fatal("no error")
	}
	var be *BundleError
	if !errors.As(err, &be) || be.Dir != filepath.Join(dir, "community-operators/nopkg/1.0.0") {
		t.Errorf("want a BundleError for nopkg, got %v", err)
	}
	var de *DuplicateBundleError
	if !errors.As(err, &de) || !slices.Equal(de.Dirs, []string{filepath.Join(dir, "community-operators/twin/a"), filepath.Join(dir, "community-operators/twin/b")}) {
		t.Errorf("want a DuplicateBundleError for twin, got %v", err)
	}
	var got []string
	for _, p := range c.Packages {
		got = append(got, p.Package+"@"+p.Version)
		checkCorpusPackage(t, host, root, p)
	}
	if want := []string{"dup@2.0.0", "dup@2.0.1", "good@1.0.0", "old@0.1.0", "old@0.2.0"}; !slices.Equal(got, want) {
		t.Fatalf("packages %v, want %v", got, want)
	}
	const good, old = 2, 3 // indexes in c.Packages, sorted by package then version
	if want := []string{host + "/library/busybox:latest", host + "/org/good:v1"}; !slices.Equal(c.Packages[good].RelatedImages, want) {
		t.Errorf("good: related images %v, want %v", c.Packages[good].RelatedImages, want)
	}
	if r := c.Packages[old].RelatedImages; len(r) != 2 || !strings.HasPrefix(r[1], host+"/org/old@sha256:") {
		t.Errorf("old 0.1.0: related images %v", r)
	}
	// Package-manifest conversion: channels and implicit default channel.
	for i, wantChannels := range []string{"beta", "beta"} {
		img, err := remote.Image(mustParseRef(t, c.Packages[old+i].BundleRef))
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		l := cf.Config.Labels
		if l["operators.operatorframework.io.bundle.channels.v1"] != wantChannels ||
			l["operators.operatorframework.io.bundle.channel.default.v1"] != "beta" ||
			l["operators.operatorframework.io.bundle.metadata.v1"] != "metadata/" {
			t.Errorf("%s: labels %v", c.Packages[old+i].Dir, l)
		}
	}
}

func mustParseRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
