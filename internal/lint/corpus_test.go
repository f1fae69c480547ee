package lint

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/testenv"
)

// corpusInput builds a lint Input from the shared corpus: every bundle
// directory is loaded with bundle.Load (package-manifest format versions are
// converted to the bundle format with an annotations.yaml made from the
// package's package.yaml, as testenv.BuildCorpus does), and a manifest.yaml
// is written for each, the way a user would: artifact
// quay.io/operator-corpus/<package>-bundle:v<version>, version and display
// information from the CSV, relatedImages = every image the CSV deploys.
// Paths are packages/<package>/<bundle directory>/manifest.yaml.
func corpusInput(t *testing.T) (Input, int) {
	t.Helper()
	dir, ok := testenv.CorpusDir()
	if !ok {
		testenv.Skipf(t, "test corpus not found at %q (set %s)", dir, testenv.CorpusDirEnv)
	}
	dirs, err := testenv.CorpusBundleDirs(dir)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Bundles: map[string]*bundle.Bundle{}, BundleErrors: map[string]error{}}
	tmp := t.TempDir()
	for i, d := range dirs {
		bdir := d
		if strings.Contains(filepath.ToSlash(d), "/packagemanifests/") {
			bdir = filepath.Join(tmp, fmt.Sprint(i))
			convertPackageManifest(t, d, bdir)
		}
		b, err := bundle.Load(bdir)
		ann := readAnnotations(t, bdir)
		pkg := ann[annPackage]
		if pkg == "" {
			pkg = filepath.Base(filepath.Dir(d))
		}
		p := fmt.Sprintf("packages/%s/%s/manifest.yaml", filepath.Base(filepath.Dir(d)), filepath.Base(d))
		version := strings.TrimPrefix(filepath.Base(d), "v")
		if b != nil && b.Version != "" {
			version = b.Version
		}
		in.Files = append(in.Files, File{Path: p, Data: corpusManifest(pkg, version, b)})
		if err != nil {
			in.BundleErrors[p] = err
			continue
		}
		in.Bundles[p] = b
	}
	return in, len(dirs)
}

// readAnnotations reads dir/metadata/annotations.yaml (nil when absent).
func readAnnotations(t *testing.T, dir string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil
	}
	var af struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &af); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	if af.Annotations == nil {
		af.Annotations = map[string]string{}
	}
	return af.Annotations
}

// convertPackageManifest copies the package-manifest format version
// directory src into dst/manifests and writes dst/metadata/annotations.yaml
// from the package.yaml next to src.
func convertPackageManifest(t *testing.T, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dst, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	csvName := ""
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("kind: ClusterServiceVersion")) {
			var meta struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			_ = yaml.Unmarshal(data, &meta)
			csvName = meta.Metadata.Name
		}
		if err := os.WriteFile(filepath.Join(dst, "manifests", e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkgFiles, _ := filepath.Glob(filepath.Join(filepath.Dir(src), "*package.yaml"))
	if len(pkgFiles) != 1 {
		t.Fatalf("%s: want one package.yaml, got %v", src, pkgFiles)
	}
	data, err := os.ReadFile(pkgFiles[0])
	if err != nil {
		t.Fatal(err)
	}
	var pf manifests.PackageManifest
	if err := yaml.Unmarshal(data, &pf); err != nil {
		t.Fatal(err)
	}
	var current, all []string
	for _, c := range pf.Channels {
		all = append(all, c.Name)
		if c.CurrentCSVName == csvName {
			current = append(current, c.Name)
		}
	}
	if len(current) == 0 {
		current = all
	}
	ann := map[string]string{
		annMediatype: "registry+v1", annManifests: "manifests/", annMetadata: "metadata/",
		annPackage: pf.PackageName, annChannels: strings.Join(current, ","),
	}
	def := pf.DefaultChannelName
	if def == "" && len(pf.Channels) == 1 {
		def = pf.Channels[0].Name
	}
	if def != "" {
		ann[annDefault] = def
	}
	out, err := yaml.Marshal(map[string]any{"annotations": ann})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dst, "metadata"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "metadata", "annotations.yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// corpusManifest writes the manifest.yaml a user would write for b.
func corpusManifest(pkg, version string, b *bundle.Bundle) []byte {
	type link struct {
		Name string `json:"name"`
		URL  string `json:"url"`
	}
	type info struct {
		DisplayName string   `json:"displayName"`
		Icon        string   `json:"icon,omitempty"`
		Keywords    []string `json:"keywords,omitempty"`
		Links       []link   `json:"links,omitempty"`
	}
	tag := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, "v"+version)
	m := map[string]any{
		"apiVersion": "app.alauda.cn/v1beta1",
		"kind":       "PackageManifest",
		"metadata":   map[string]any{"name": pkg + ".v" + version},
	}
	spec := map[string]any{
		"type":     "bundle",
		"artifact": "quay.io/operator-corpus/" + pkg + "-bundle:" + tag,
		"version":  "v" + version,
		"arch":     []string{"linux/amd64"},
	}
	in := info{DisplayName: pkg}
	if b != nil {
		if b.DisplayName != "" {
			in.DisplayName = b.DisplayName
		}
		if len(b.CSV.Spec.Icon) > 0 {
			in.Icon = b.CSV.Spec.Icon[0].Data
		}
		for _, k := range b.CSV.Spec.Keywords {
			if k != "" {
				in.Keywords = append(in.Keywords, k)
			}
		}
		for _, l := range b.CSV.Spec.Links {
			in.Links = append(in.Links, link{l.Name, l.URL})
		}
		if len(b.Images) > 0 {
			spec["relatedImages"] = b.Images
		}
	}
	spec["info"] = in
	m["spec"] = spec
	out, err := yaml.Marshal(m)
	if err != nil {
		panic(err)
	}
	return out
}

// captureOutput runs f with os.Stdout and os.Stderr redirected and returns
// what was written to them.
func captureOutput(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = w, w
	done := make(chan []byte)
	go func() {
		data, _ := io.ReadAll(r)
		done <- data
	}()
	defer func() {
		os.Stdout, os.Stderr = stdout, stderr
	}()
	f()
	os.Stdout, os.Stderr = stdout, stderr
	w.Close()
	return string(<-done)
}

func TestCorpus(t *testing.T) {
	testenv.Short(t, "lints every bundle of the corpus with every validator")
	in, n := corpusInput(t)
	var fs []Finding
	leak := captureOutput(t, func() {
		fs = Run(context.Background(), Config{}, in)
	})
	if leak != "" {
		t.Errorf("the validators wrote to stdout/stderr:\n%s", leak)
	}
	counts := map[string]int{}
	for _, f := range fs {
		if _, ok := Rule(f.Rule); !ok {
			t.Errorf("finding with a rule outside the catalog: %v", f)
		}
		if f.Line < 1 || f.Column < 1 {
			t.Errorf("finding without line and column: %v", f)
		}
		counts[fmt.Sprintf("%s %s", f.Rule, f.Severity)]++
	}
	keys := sortedKeys(counts)
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "# lint findings over the corpus: %d bundles, default configuration\n", n)
	fmt.Fprintf(&b, "# rule severity count\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d\n", k, counts[k])
	}
	golden(t, filepath.Join("testdata", "corpus-counts.golden"), b.String())
	if p := os.Getenv("LINT_CORPUS_OUT"); p != "" {
		// The whole report, to read what the counts are made of.
		var out bytes.Buffer
		_ = Format(&out, fs, FormatText)
		if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCorpusPrelinted: linting each bundle of the corpus alone as it is
// read (BundleRules, Input.Prelinted) and keeping it slim (bundle.Slim)
// gives exactly the findings of linting the whole bundles together,
// upgrade-graph, OLM v1 and dependency/missing rules included: what a
// command over a whole catalog does to bound its memory.
func TestCorpusPrelinted(t *testing.T) {
	cfg := Config{OLMv1Clusters: []string{"olmv1"}, KubernetesVersion: "1.33"}
	listing := &Listing{Cluster: "prod", Complete: true, Versions: func(string) ([]string, error) { return nil, nil }}
	whole, _ := corpusInput(t)
	whole.Listing = listing
	want := Run(context.Background(), cfg, whole)

	slim, _ := corpusInput(t)
	slim.Listing = listing
	slim.Prelinted = map[string][]Finding{}
	for _, f := range slim.Files {
		b := slim.Bundles[f.Path]
		if b == nil {
			continue
		}
		slim.Prelinted[f.Path] = BundleRules(cfg, f, b, nil)
		b.Slim()
		b.Slim() // idempotent
		if b.Loaded != nil && len(b.Loaded.Objects) != 0 {
			t.Fatalf("%s: Slim kept %d objects", f.Path, len(b.Loaded.Objects))
		}
	}
	got := Run(context.Background(), cfg, slim)
	if len(want) == 0 {
		t.Fatal("the corpus gave no finding: the comparison proves nothing")
	}
	if len(got) != len(want) {
		seen := map[string]int{}
		for _, f := range got {
			seen[fmt.Sprint(f)]++
		}
		for _, f := range want {
			if k := fmt.Sprint(f); seen[k] > 0 {
				seen[k]--
			} else {
				t.Errorf("only with whole bundles: %+v", f)
			}
		}
		for k, n := range seen {
			if n > 0 {
				t.Errorf("only with slim bundles: %s", k)
			}
		}
		t.Fatalf("prelinted slim bundles: %d findings, whole bundles: %d", len(got), len(want))
	}
	for i := range want {
		if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
			t.Fatalf("finding %d differs:\nslim:  %+v\nwhole: %+v", i, got[i], want[i])
		}
	}
}
