package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/target"
)

// pushNamespaced replaces tiny v's bundle at the source by one whose CSV
// does not support the AllNamespaces install mode: OwnNamespace and
// SingleNamespace, or SingleNamespace only (single).
func (f *fixture) pushNamespaced(t *testing.T, v string, single bool) {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, "testdata/bundles/tiny/1.0.0", dir, func(s string) string {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "REGISTRY", f.src), "1.0.0", v)
		if single {
			s = strings.ReplaceAll(s, "{type: OwnNamespace, supported: true}", "{type: OwnNamespace, supported: false}")
		}
		return strings.ReplaceAll(s, "{type: AllNamespaces, supported: true}", "{type: AllNamespaces, supported: false}")
	})
	img, err := bundle.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, f.src+"/tiny/bundle:v"+v), img); err != nil {
		t.Fatal(err)
	}
}

// olmv1Options are the options of a run of the olm cluster edge with a
// ClusterCatalog and a ClusterExtension of tiny with watchNamespace watch
// ("" none).
func (f *fixture) olmv1Options(watch string) Options {
	return Options{
		Source: f.source, Cluster: "edge", Target: target.OLM,
		Mirror:  mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog: catalogOpts(f.catalog),
		TargetSettings: target.OLMOptions{
			BaseImage:    f.src + "/operator-framework/opm:v1.73.0",
			CatalogKinds: []string{"ClusterCatalog"},
			Extensions:   []olm.ExtensionOptions{{Package: "tiny", Namespace: "tiny", WatchNamespace: watch, Where: "publish.yaml:12"}},
		},
	}
}

// TestOLMv1OwnNamespaceDefault: a ClusterExtension of a package whose
// bundles support OwnNamespace but not AllNamespaces, with no
// watchNamespace, is planned and rendered with the install namespace as
// spec.config.inline.watchNamespace (the OwnNamespace install mode), and
// keeps it on a run that reads no bundle (the entries of the last catalog
// image).
func TestOLMv1OwnNamespaceDefault(t *testing.T) {
	f := newFixture(t)
	f.pushNamespaced(t, "1.0.0", false)
	f.pushNamespaced(t, "1.1.0", false)
	pushRandom(t, f.src+"/operator-framework/opm:v1.73.0")
	if _, err := PlanRun(context.Background(), PlanOptions{Options: f.olmv1Options("")}); err != nil {
		t.Fatalf("plan: %v", err)
	}
	if _, err := Run(context.Background(), f.olmv1Options("")); err != nil {
		t.Fatalf("run: %v", err)
	}
	ext := f.catalogFile(t, "rendered/edge/clusterextension-tiny.yaml")
	if !strings.Contains(ext, "  config:\n    configType: Inline\n    inline:\n      watchNamespace: tiny\n") {
		t.Errorf("ClusterExtension:\n%s", ext)
	}
	res, err := Run(context.Background(), f.olmv1Options(""))
	if err != nil || res.Commit != "" || f.catalogFile(t, "rendered/edge/clusterextension-tiny.yaml") != ext {
		t.Errorf("unchanged run: commit %q, %v", res.Commit, err)
	}
}

// TestOLMv1InstallMode: a ClusterExtension of a package whose bundle OLM
// v1 can install only in SingleNamespace mode, with no watchNamespace (no
// namespace to watch can be assumed), stops plan and run with an input
// error at the extension's publish.yaml entry naming the field to set,
// before anything is mirrored; with another namespace as watchNamespace
// the run renders it with spec.config.inline.watchNamespace.
func TestOLMv1InstallMode(t *testing.T) {
	f := newFixture(t)
	f.pushNamespaced(t, "1.0.0", true)
	f.pushNamespaced(t, "1.1.0", true)
	pushRandom(t, f.src+"/operator-framework/opm:v1.73.0")
	opts := f.olmv1Options
	check := func(what string, err error) {
		t.Helper()
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "publish.yaml:12: ") ||
			!strings.Contains(err.Error(), "clusters.edge.olm.clusterExtensions[0].watchNamespace") || !strings.Contains(err.Error(), "supports SingleNamespace but not AllNamespaces") {
			t.Fatalf("%s: %v, want an input error at publish.yaml:12 naming clusterExtensions[0].watchNamespace", what, err)
		}
	}
	_, err := PlanRun(context.Background(), PlanOptions{Options: opts("")})
	check("plan", err)
	_, err = Run(context.Background(), opts(""))
	check("run", err)
	if _, err := remote.Head(mustRef(t, f.dst+"/mirror/tiny/bundle:v1.0.0")); err == nil {
		t.Error("the bundle was mirrored before the ClusterExtension was refused")
	}

	// A watch namespace other than the install namespace is SingleNamespace.
	if _, err := Run(context.Background(), opts("apps")); err != nil {
		t.Fatalf("run with watchNamespace: %v", err)
	}
	ext := f.catalogFile(t, "rendered/edge/clusterextension-tiny.yaml")
	if !strings.Contains(ext, "configType: Inline") || !strings.Contains(ext, "watchNamespace: apps") {
		t.Errorf("ClusterExtension:\n%s", ext)
	}

	// Nothing changed in the package repo: the next run takes the bundles'
	// entries from the last catalog image (olm.csv.metadata, install
	// modes included) and refuses the ClusterExtension without
	// watchNamespace all the same.
	var log strings.Builder
	o := opts("")
	o.Log = slog.New(slog.NewTextHandler(&log, nil))
	_, err = Run(context.Background(), o)
	check("run of unchanged bundles", err)
	if !strings.Contains(log.String(), "2 unchanged bundles taken from the last catalog image") {
		t.Errorf("the second run did not reuse the catalog entries:\n%s", log.String())
	}
}
