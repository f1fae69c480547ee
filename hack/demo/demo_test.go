package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/testenv"
)

// fakePublishEnv makes the test binary act as a publish binary: "ok" exits
// 0 without doing anything (like /bin/true), "fail" prints a message and
// exits 3.
const fakePublishEnv = "DEMO_TEST_FAKE_PUBLISH"

func TestMain(m *testing.M) {
	switch os.Getenv(fakePublishEnv) {
	case "ok":
		os.Exit(0)
	case "fail":
		io.WriteString(os.Stderr, "fake publish: registry unreachable")
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// newTestDemo returns a demo writing to the test log with a work directory
// of its own.
func newTestDemo(t *testing.T) (*demo, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	d := &demo{out: &out, runTimeout: time.Minute, work: t.TempDir()}
	var err error
	if d.examples, err = filepath.Abs(examplesDir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("demo output:\n%s", out.String())
		}
	})
	return d, &out
}

func startTestRegistry(t *testing.T, name string) *localRegistry {
	t.Helper()
	r, err := startRegistry(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("close %s registry: %v", name, err)
		}
	})
	return r
}

// TestStageBundles runs step 2 and checks the source registry: every
// stand-in exists, and each bundle image carries a CSV whose images are all
// stand-ins in the source registry.
func TestStageBundles(t *testing.T) {
	d, _ := newTestDemo(t)
	d.src = startTestRegistry(t, "source")
	ctx := context.Background()
	if err := d.stageBundles(ctx); err != nil {
		t.Fatal(err)
	}
	if len(d.bundles) != 5 {
		t.Fatalf("staged %d bundles, want 5", len(d.bundles))
	}
	for _, b := range d.bundles {
		for _, si := range b.StandInImages() {
			if !strings.HasPrefix(si, d.src.Host+"/example/") {
				t.Errorf("%s: stand-in %s not in the source registry", b.Package, si)
			}
			ref, err := name.ParseReference(si)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := remote.Head(ref); err != nil {
				t.Errorf("%s: stand-in not pushed: %v", si, err)
			}
		}
		want := d.src.Host + "/example/" + b.Package + "-bundle:v" + b.Version
		if b.BundleRef != want {
			t.Errorf("bundle ref %s, want %s", b.BundleRef, want)
		}
		csv := pullCSV(t, b.BundleRef)
		imgs := csvImages(csv)
		if len(imgs) != len(b.Images) {
			t.Errorf("%s: bundle CSV has %d images, want %d", b.BundleRef, len(imgs), len(b.Images))
		}
		for _, img := range imgs {
			if !strings.HasPrefix(img, d.src.Host+"/") {
				t.Errorf("%s: CSV still deploys %s", b.BundleRef, img)
			}
		}
		if got := csv.Annotations["containerImage"]; !strings.HasPrefix(got, d.src.Host+"/") {
			t.Errorf("%s: containerImage annotation %s not rewritten", b.BundleRef, got)
		}
	}
}

// pullCSV pulls a bundle image and decodes the CSV in its manifests/.
func pullCSV(t *testing.T, ref string) *v1alpha1.ClusterServiceVersion {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%s: layers %d, %v", ref, len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(h.Name, "manifests/") && strings.HasSuffix(h.Name, ".clusterserviceversion.yaml") {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			var csv v1alpha1.ClusterServiceVersion
			if err := yaml.Unmarshal(data, &csv); err != nil {
				t.Fatal(err)
			}
			return &csv
		}
	}
	t.Fatalf("%s: no CSV in the bundle", ref)
	return nil
}

// packageManifestDoc is the PackageManifest shape of docs/design.md#package-manifest.
type packageManifestDoc struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Type     string   `json:"type"`
		Artifact string   `json:"artifact"`
		Version  string   `json:"version"`
		Arch     []string `json:"arch"`
		Info     struct {
			DisplayName string   `json:"displayName"`
			Description string   `json:"description"`
			Icon        string   `json:"icon"`
			Keywords    []string `json:"keywords"`
			Links       []struct {
				Name string `json:"name"`
				URL  string `json:"url"`
			} `json:"links"`
		} `json:"info"`
		RelatedImages []string `json:"relatedImages"`
	} `json:"spec"`
}

// TestPackageRepo runs steps 2 to 4 and the two later source commits, and
// checks the package repo's history and manifests.
func TestPackageRepo(t *testing.T) {
	d, _ := newTestDemo(t)
	d.src = startTestRegistry(t, "source")
	if err := d.stageBundles(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := d.initPackageRepo()
	if err != nil {
		t.Fatal(err)
	}
	assertTree(t, r.repo, []string{
		"packages/cache-operator/1.0.0/manifest.yaml",
		"packages/hello-operator/0.1.0/manifest.yaml",
		"packages/hello-operator/0.2.0/manifest.yaml",
		"packages/queue-operator/2.1.0/manifest.yaml",
	})
	if err := r.commitUpgrade(); err != nil {
		t.Fatal(err)
	}
	if err := r.commitDelist(); err != nil {
		t.Fatal(err)
	}
	assertTree(t, r.repo, []string{
		"packages/cache-operator/1.0.0/manifest.yaml",
		"packages/hello-operator/0.1.0/manifest.yaml",
		"packages/hello-operator/0.2.0/manifest.yaml",
		"packages/hello-operator/0.3.0/manifest.yaml",
	})

	head, err := r.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	if head.Name().Short() != "main" {
		t.Errorf("package repo branch %s, want main", head.Name().Short())
	}
	iter, err := r.repo.Log(&git.LogOptions{From: head.Hash()})
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	iter.ForEach(func(c *object.Commit) error {
		subjects = append(subjects, subject(c.Message))
		if c.Author.Name != "Demo" || c.Author.Email != "demo@example.com" || c.Author.When.Year() != 2025 {
			t.Errorf("commit %s: author %v", c.Hash, c.Author)
		}
		return nil
	})
	wantSubjects := []string{"Delist queue-operator", "Upgrade hello-operator to 0.3.0",
		"Add cache-operator 1.0.0, hello-operator 0.1.0, hello-operator 0.2.0, queue-operator 2.1.0"}
	if strings.Join(subjects, "\n") != strings.Join(wantSubjects, "\n") {
		t.Errorf("package repo log:\n%s\nwant:\n%s", strings.Join(subjects, "\n"), strings.Join(wantSubjects, "\n"))
	}

	data, err := os.ReadFile(filepath.Join(d.pkgRepo, "packages/hello-operator/0.3.0/manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pm packageManifestDoc
	if err := yaml.UnmarshalStrict(data, &pm); err != nil {
		t.Fatalf("manifest: %v\n%s", err, data)
	}
	src := d.src.Host
	if pm.APIVersion != "app.alauda.cn/v1beta1" || pm.Kind != "PackageManifest" ||
		pm.Metadata.Name != "hello-operator.v0.3.0" || pm.Spec.Type != "bundle" ||
		pm.Spec.Artifact != src+"/example/hello-operator-bundle:v0.3.0" || pm.Spec.Version != "v0.3.0" ||
		strings.Join(pm.Spec.Arch, ",") != "linux/amd64" || pm.Spec.Info.DisplayName != "Hello Operator" ||
		pm.Spec.Info.Icon == "" || len(pm.Spec.Info.Links) == 0 || pm.Spec.Info.Links[0].Name != "Documentation" ||
		strings.Join(pm.Spec.Info.Keywords, ",") != "hello,demo,greeting" {
		t.Errorf("unexpected manifest:\n%s", data)
	}
	wantImages := []string{src + "/example/hello-operator:v0.3.0", src + "/example/hello-worker:v0.3.0"}
	if strings.Join(pm.Spec.RelatedImages, " ") != strings.Join(wantImages, " ") {
		t.Errorf("relatedImages %v, want %v", pm.Spec.RelatedImages, wantImages)
	}

	if err := d.initCatalog(); err != nil {
		t.Fatal(err)
	}
	if head, err := catalogHead(d.catalog); err != nil || head != nil {
		t.Errorf("new catalog head = %v, %v; want none", head, err)
	}
}

// assertTree checks the files of the HEAD commit.
func assertTree(t *testing.T, repo *git.Repository, want []string) {
	t.Helper()
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	files, err := c.Files()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	files.ForEach(func(f *object.File) error {
		got = append(got, f.Name)
		return nil
	})
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("HEAD %s files:\n%s\nwant:\n%s", c.Hash, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// catalogFixture makes a catalog repo (non-bare: cloning works the same)
// with rendered objects as publish would write them, and the queue-operator
// Artifact with the given present value.
func catalogFixture(t *testing.T, dir string, queuePresent string) {
	t.Helper()
	files := map[string]string{
		"publish/state/global.yaml":                    "source:\n  commit: abc\n",
		"rendered/global/queue-operator/artifact.yaml": "apiVersion: app.alauda.io/v1alpha1\nkind: Artifact\nmetadata:\n  name: queue-operator\nspec:\n  present: " + queuePresent + "\n",
		"rendered/global/hello-operator/versions.yaml": "---\napiVersion: app.alauda.io/v1alpha1\nkind: ArtifactVersion\nmetadata:\n  name: hello-operator.v0.2.0\n  labels:\n    cpaas.io/artifact-version: hello-operator\nspec:\n  tag: v0.2.0\n  present: true\n" +
			"--- # next\napiVersion: app.alauda.io/v1alpha1\nkind: ArtifactVersion\nmetadata:\n  name: hello-operator.v0.3.0\n  labels:\n    cpaas.io/artifact-version: hello-operator\nspec:\n  tag: v0.3.0\n  present: true\n",
	}
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(catalogBranch)},
	})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	sig := &object.Signature{Name: "publish", Email: "publish@example.com", When: time.Unix(1700000000, 0)}
	if _, err := wt.Commit("Publish 3 changes\n\nSource-Commit: abc\n", &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
		t.Fatal(err)
	}
}

// TestShowCatalog checks step 6 against a hand-made catalog: what it prints,
// and that it fails when the delisted Artifact is still present.
func TestShowCatalog(t *testing.T) {
	for _, tc := range []struct {
		present string
		wantErr string
	}{
		{present: "false"},
		{present: "true", wantErr: "Artifact queue-operator should have spec.present: false"},
	} {
		t.Run("present="+tc.present, func(t *testing.T) {
			d, out := newTestDemo(t)
			d.bundles = []*exampleBundle{{Package: "hello-operator", Version: "0.2.0"}, {Package: "hello-operator", Version: "0.3.0"}}
			d.catalog = filepath.Join(d.work, "catalog")
			catalogFixture(t, d.catalog, tc.present)
			err := d.showCatalog()
			if tc.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			for _, want := range []string{
				"rendered\n└── global\n    ├── hello-operator\n    │   └── versions.yaml\n    └── queue-operator\n        └── artifact.yaml\n",
				"$ cat rendered/global/queue-operator/artifact.yaml\n",
				"$ cat rendered/global/hello-operator/versions.yaml\napiVersion: app.alauda.io/v1alpha1\nkind: ArtifactVersion\nmetadata:\n  name: hello-operator.v0.3.0\n",
				" Publish 3 changes\n",
				"    Source-Commit: abc\n",
			} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q", want)
				}
			}
		})
	}
}

// TestShowCatalogEmpty checks the message when publish pushed nothing.
func TestShowCatalogEmpty(t *testing.T) {
	d, _ := newTestDemo(t)
	if err := d.initCatalog(); err != nil {
		t.Fatal(err)
	}
	err := d.showCatalog()
	if err == nil || !strings.Contains(err.Error(), "publish pushed no commit") {
		t.Fatalf("error %v, want 'publish pushed no commit'", err)
	}
}

// TestRunWithFakePublish runs the whole demo with this test binary as a
// publish that does nothing, then as one that fails.
func TestRunWithFakePublish(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Abs(examplesDir)

	t.Run("no-op publish", func(t *testing.T) {
		t.Setenv(fakePublishEnv, "ok")
		var out bytes.Buffer
		d := &demo{out: &out, runTimeout: time.Minute}
		err := d.run(context.Background(), self, examples)
		if err == nil || !strings.Contains(err.Error(), "step 6: the catalog repo is empty") {
			t.Fatalf("error %v, want step 6 to find an empty catalog\n%s", err, out.String())
		}
		if n := strings.Count(out.String(), "$ publish run --source $WORK/package-repo --catalog $WORK/catalog.git --dst-registry 127.0.0.1:"); n != 4 {
			t.Errorf("%d publish runs, want 4\n%s", n, out.String())
		}
		if _, err := os.Stat(d.work); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("work directory %s not removed: %v", d.work, err)
		}
	})

	t.Run("failing publish", func(t *testing.T) {
		t.Setenv(fakePublishEnv, "fail")
		var out bytes.Buffer
		d := &demo{out: &out, runTimeout: time.Minute}
		err := d.run(context.Background(), self, examples)
		if err == nil || !strings.Contains(err.Error(), "step 5: publish run #1 failed: exit status 3") {
			t.Fatalf("error %v, want publish run #1 to fail", err)
		}
		if !strings.Contains(out.String(), "  | fake publish: registry unreachable\n") {
			t.Errorf("publish output not streamed with a prefix:\n%s", out.String())
		}
	})
}

func TestPrefixWriter(t *testing.T) {
	var buf bytes.Buffer
	pw := &prefixWriter{w: &buf, prefix: "> "}
	io.WriteString(pw, "one\ntw")
	io.WriteString(pw, "o\n\nthree")
	pw.Flush()
	if got, want := buf.String(), "> one\n> two\n> \n> three\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSplitDocs(t *testing.T) {
	docs := splitDocs([]byte("---\na: 1\n---\n\n--- # c\nb: 2\n---"))
	if len(docs) != 2 || string(docs[0]) != "a: 1\n" || string(docs[1]) != "b: 2\n" {
		t.Errorf("got %q", docs)
	}
}

func TestScalar(t *testing.T) {
	for in, want := range map[string]string{
		"Hello Operator": "Hello Operator",
		"v0.2.0":         "v0.2.0",
		"1.0":            `"1.0"`,
		"a: b":           `'a: b'`,
		"":               `""`,
	} {
		got := scalar(in)
		if got != want {
			t.Errorf("scalar(%q) = %s, want %s", in, got, want)
		}
		var back string
		if err := yaml.Unmarshal([]byte("k: "+got), &struct {
			K *string `json:"k"`
		}{&back}); err != nil || back != in {
			t.Errorf("scalar(%q) = %s reads back as %q, %v", in, got, back, err)
		}
	}
}

func TestVersionLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"0.2.0", "0.3.0", true},
		{"0.3.0", "0.2.0", false},
		{"0.9.0", "0.10.0", true},
		{"1.0", "1.0.1", true},
		{"1.0.0", "1.0.0", false},
	} {
		if got := versionLess(tc.a, tc.b); got != tc.want {
			t.Errorf("versionLess(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}

// allFromCache matches the cache line of a package run that read every
// blob from the cache.
var allFromCache = regexp.MustCompile(`cache +(\d+) of (\d+) blobs .* read from \S+\n`)

// fromCacheOnly reports whether a cache line of out says every blob came
// from the cache.
func fromCacheOnly(out string) bool {
	for _, m := range allFromCache.FindAllStringSubmatch(out, -1) {
		if m[1] == m[2] {
			return true
		}
	}
	return false
}

// TestDemoWithPublish runs the README demo, both stories, with the real
// publish binary (built here): what `make demo` and `make demo-airgap` do.
func TestDemoWithPublish(t *testing.T) {
	testenv.Short(t, "builds the publish binary")
	bin := filepath.Join(t.TempDir(), "publish")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/publish")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	examples, _ := filepath.Abs(examplesDir)
	for _, airgap := range []bool{false, true} {
		t.Run(map[bool]string{false: "runs", true: "airgap"}[airgap], func(t *testing.T) {
			var out bytes.Buffer
			d := &demo{out: &out, runTimeout: 2 * time.Minute, airgapped: airgap}
			if err := d.run(t.Context(), bin, examples); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			want := "Listing, upgrade and delisting reached the catalog repo"
			if airgap {
				want = "The archive alone put every image into the destination registry"
				if !strings.Contains(out.String(), "same sha256 both times") || !fromCacheOnly(out.String()) {
					t.Errorf("the second package did not come from the cache, the same bytes:\n%s", out.String())
				}
			}
			if !strings.Contains(out.String(), want) {
				t.Errorf("no %q in:\n%s", want, out.String())
			}
		})
	}
}
