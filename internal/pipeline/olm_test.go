package pipeline

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/target"
	"sigs.k8s.io/yaml"
)

// runOLM publishes the fixture to an upstream OLM cluster "edge".
func (f *fixture) runOLM(t *testing.T) *Result {
	t.Helper()
	res, _ := f.runOLMLog(t)
	return res
}

// runOLMLog is runOLM, also returning the run's log; delisted versions
// leave the catalog at once (deprecationPeriod 0).
func (f *fixture) runOLMLog(t *testing.T) (*Result, string) {
	t.Helper()
	return f.runOLMAt(t, "0", nil)
}

// olmOptions are the options of runOLMAt.
func (f *fixture) olmOptions(period string, now func() time.Time, log io.Writer) Options {
	return Options{
		Log:        slog.New(slog.NewTextHandler(log, nil)),
		Source:     f.source,
		Cluster:    "edge",
		Target:     target.OLM,
		Mirror:     mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog:    catalogOpts(f.catalog),
		AllowEmpty: true,
		Now:        now,
		TargetSettings: target.OLMOptions{
			BaseImage:         f.src + "/operator-framework/opm:v1.73.0",
			Images:            []string{f.src + "/operator-framework/olm:v0.38.0"},
			Source:            olm.SourceOptions{PollInterval: "30m"},
			DeprecationPeriod: period,
		},
	}
}

// runOLMAt is runOLMLog with the deprecation period and the clock (nil:
// time.Now) given.
func (f *fixture) runOLMAt(t *testing.T, period string, now func() time.Time) (*Result, string) {
	t.Helper()
	var log bytes.Buffer
	res, err := Run(context.Background(), f.olmOptions(period, now, &log))
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	return res, log.String()
}

// catalogBundles reads the catalog image the CatalogSource names and
// returns its olm.package names and olm.bundle images.
func (f *fixture) catalogBundles(t *testing.T) (pkgs, images []string) {
	t.Helper()
	cs := f.catalogFile(t, "rendered/edge/"+target.CatalogSourceFile)
	if err := olm.ValidateCatalogSource([]byte(cs)); err != nil {
		t.Fatalf("CatalogSource against the OLM CRD: %v\n%s", err, cs)
	}
	var obj struct {
		Spec struct {
			Image          string `json:"image"`
			SourceType     string `json:"sourceType"`
			UpdateStrategy struct {
				RegistryPoll struct {
					Interval string `json:"interval"`
				} `json:"registryPoll"`
			} `json:"updateStrategy"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(cs), &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Spec.SourceType != "grpc" || obj.Spec.UpdateStrategy.RegistryPoll.Interval != "30m" ||
		!strings.HasPrefix(obj.Spec.Image, f.dst+"/mirror/olm/publish-catalog@sha256:") {
		t.Fatalf("CatalogSource:\n%s", cs)
	}
	img, err := remote.Image(mustRef(t, obj.Spec.Image))
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := img.Layers()
	rc, err := layers[len(layers)-1].Uncompressed()
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
		if !strings.HasPrefix(h.Name, "configs/") || !strings.HasSuffix(h.Name, "/catalog.json") {
			continue
		}
		data, _ := io.ReadAll(tr)
		cfg, err := declcfg.LoadReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range cfg.Packages {
			pkgs = append(pkgs, p.Name)
		}
		for _, b := range cfg.Bundles {
			images = append(images, b.Name+"="+b.Image)
		}
	}
	sort.Strings(images)
	return pkgs, images
}

// TestRunOLMTarget is the upstream OLM story: a run lists the operator in a
// catalog image and a CatalogSource, an unchanged source republishes
// nothing, delisting a version drops its bundle from the catalog and
// delisting the last one drops the package.
func TestRunOLMTarget(t *testing.T) {
	f := newFixture(t)
	pushRandom(t, f.src+"/operator-framework/opm:v1.73.0")
	pushRandom(t, f.src+"/operator-framework/olm:v0.38.0")

	res := f.runOLM(t)
	if res.Commit == "" || len(res.Changes.Listed) != 1 {
		t.Fatalf("first run: commit %q changes %+v", res.Commit, res.Changes)
	}
	for _, p := range res.Files {
		if strings.HasPrefix(p, "rendered/") && p != "rendered/edge/"+target.CatalogSourceFile {
			t.Errorf("an olm cluster gets only its CatalogSource in rendered/, not %s", p)
		}
	}
	pkgs, imgs := f.catalogBundles(t)
	if len(pkgs) != 1 || pkgs[0] != "tiny" || len(imgs) != 2 ||
		!strings.HasPrefix(imgs[0], "tiny.v1.0.0="+f.dst+"/mirror/tiny/bundle@sha256:") || !strings.HasPrefix(imgs[1], "tiny.v1.1.0=") {
		t.Fatalf("catalog: packages %v bundles %v", pkgs, imgs)
	}
	for _, ref := range []string{"operator-framework/olm:v0.38.0", "operator-framework/opm:v1.73.0", "tiny/manager:v1.1.0"} {
		if _, err := remote.Head(mustRef(t, f.dst+"/mirror/"+ref)); err != nil {
			t.Errorf("%s was not mirrored: %v", ref, err)
		}
	}

	// Unchanged: the entries come from the last catalog image, no bundle is
	// read again, and the catalog image has the same digest.
	if res, log := f.runOLMLog(t); res.Commit != "" || !strings.Contains(log, "olm: 2 unchanged bundles taken from the last catalog image, 0 read again") {
		t.Errorf("unchanged source: commit %q (the catalog image must have the same digest)\n%s", res.Commit, log)
	}

	if err := os.RemoveAll(filepath.Join(f.source, "packages", "tiny", "1.1.0")); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "delist tiny 1.1.0")
	if res := f.runOLM(t); len(res.Changes.Delisted) != 1 {
		t.Fatalf("delist run: %+v", res.Changes)
	}
	if pkgs, imgs := f.catalogBundles(t); len(pkgs) != 1 || len(imgs) != 1 || !strings.HasPrefix(imgs[0], "tiny.v1.0.0=") {
		t.Fatalf("after delisting 1.1.0: packages %v bundles %v", pkgs, imgs)
	}

	if err := os.RemoveAll(filepath.Join(f.source, "packages", "tiny")); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "delist tiny")
	f.runOLM(t)
	if pkgs, imgs := f.catalogBundles(t); len(pkgs) != 0 || len(imgs) != 0 {
		t.Fatalf("after delisting tiny: packages %v bundles %v", pkgs, imgs)
	}
}

// TestRenderOLMTarget: `publish render` of an olm cluster rewrites the
// CatalogSource from the catalog image recorded in publish/state.yaml (no
// registry access), and says what to do when there is none yet.
func TestRenderOLMTarget(t *testing.T) {
	f := newFixture(t)
	pushRandom(t, f.src+"/operator-framework/opm:v1.73.0")
	pushRandom(t, f.src+"/operator-framework/olm:v0.38.0")
	f.runOLM(t)
	before := f.catalogFile(t, "rendered/edge/"+target.CatalogSourceFile)

	clone := t.TempDir()
	if _, err := git.PlainClone(clone, false, &git.CloneOptions{URL: f.catalog, ReferenceName: "refs/heads/main"}); err != nil {
		t.Fatal(err)
	}
	opts := RenderOptions{
		Source: f.source, CatalogDir: clone, Cluster: "edge", Target: target.OLM,
		TargetSettings: target.OLMOptions{Source: olm.SourceOptions{PollInterval: "5m"}},
	}
	if _, err := Render(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(clone, "rendered", "edge", target.CatalogSourceFile))
	if want := strings.Replace(before, "interval: 30m", "interval: 5m", 1); string(after) != want {
		t.Errorf("rendered CatalogSource:\n%s\nwant:\n%s", after, want)
	}

	// A cluster with no state yet: render cannot map the repositories.
	opts.Cluster = "lab"
	_, err := Render(context.Background(), opts)
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "publish/state/lab.yaml") {
		t.Errorf("cluster never published: %v", err)
	}
	// With --dst-registry, the olm target says its catalog image is missing.
	opts.DstRegistry, opts.PlainHTTP = f.dst+"/mirror", true
	_, err = Render(context.Background(), opts)
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "publish run --target olm") {
		t.Errorf("cluster without a catalog image: %v", err)
	}
}

// TestRunOLMBadSettings: wrong OLM settings stop the run before anything is
// mirrored or committed, naming the publish.yaml key.
func TestRunOLMBadSettings(t *testing.T) {
	f := newFixture(t)
	_, err := Run(context.Background(), Options{
		Source: f.source, Cluster: "edge", Target: target.OLM,
		Mirror:         mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog:        catalogOpts(f.catalog),
		TargetSettings: target.OLMOptions{Source: olm.SourceOptions{PollInterval: "soon"}, CatalogImage: "registry.local/catalog@sha256:00"},
	})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "clusters.edge.olm") || !strings.Contains(err.Error(), "poll interval") || !strings.Contains(err.Error(), "catalogImage") {
		t.Fatalf("bad OLM settings: %v", err)
	}
	if _, err := remote.Head(mustRef(t, f.dst+"/mirror/tiny/bundle:v1.0.0")); err == nil {
		t.Error("the bundle was mirrored before the settings were checked")
	}
	if _, err := Run(context.Background(), Options{Source: f.source, Target: "openshift", Catalog: catalogOpts(f.catalog)}); !errors.As(err, &ie) {
		t.Errorf("unknown target: %v", err)
	}
}
