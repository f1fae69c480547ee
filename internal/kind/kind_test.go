package kind_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
)

// fakeKind is a kind of package made for the tests: its artifacts are
// listed in deploys (reference → images deployed); a reference it does
// not know is missing (a read error), one in broken a registry failure.
type fakeKind struct {
	name    string
	deploys map[string][]string
	broken  map[string]bool
	mu      sync.Mutex
	reads   []string // the references read, in order
	linted  []string // the manifest paths linted
}

func (k *fakeKind) Name() string                            { return k.name }
func (k *fakeKind) Key(_ kind.Env, v *model.Version) string { return v.Ref() }

func (k *fakeKind) Read(_ context.Context, _ kind.Env, vs []*model.Version) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	var errs []error
	for _, v := range vs {
		k.reads = append(k.reads, v.Ref())
		switch imgs, ok := k.deploys[v.Ref()]; {
		case k.broken[v.Ref()]:
			errs = append(errs, fmt.Errorf("%s: registry down", v.Where()))
		case ok:
			v.SetContent(fakeContent{kind: k.name, images: imgs})
		default:
			v.SetReadErr(fmt.Errorf("%s %s not found", k.name, v.Ref()))
		}
	}
	return errors.Join(errs...)
}

func (k *fakeKind) Lint(_ *lint.Input, _ kind.Env, v *model.Version) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.linted = append(k.linted, v.Manifest.Path)
}

type fakeContent struct {
	kind   string
	images []string
}

func (c fakeContent) Images() []string   { return c.images }
func (c fakeContent) ImagesFrom() string { return "the " + c.kind + "'s templates" }
func (c fakeContent) Info() (string, string) {
	return "from the " + c.kind, ""
}

func pm(typ, artifact, version string, related ...string) *manifest.PackageManifest {
	m := &manifest.PackageManifest{Artifact: artifact, Path: "packages/" + artifact + "/" + version + "/manifest.yaml",
		Lines: map[string]int{"spec.type": 6, "spec.artifact": 7}, Version: semver.MustParse(version)}
	m.Spec.Type = typ
	m.Spec.Artifact = "src.example.com/" + artifact + ":" + version
	m.Spec.RelatedImages = related
	return m
}

// TestKindsThroughTheStages: a second kind of package, registered beside
// the first, goes through what the stages do with versions (selection,
// reading, the shared cache of a run's clusters, images, display facts,
// read errors, lint) with nothing but its registration: each version is
// read by its own kind, the versions of one kind together.
func TestKindsThroughTheStages(t *testing.T) {
	bundles := &fakeKind{name: manifest.TypeBundle, deploys: map[string][]string{
		"src.example.com/op:1.0.0": {"src.example.com/operator:1", "src.example.com/shared:1"},
	}}
	charts := &fakeKind{name: "fakechart", deploys: map[string][]string{
		"src.example.com/web:2.0.0": {"src.example.com/nginx:1", "src.example.com/shared:1"},
	}, broken: map[string]bool{"src.example.com/db:1.0.0": true}}
	defer kind.Register(bundles)()
	defer kind.Register(charts)()

	ms := []*manifest.PackageManifest{
		pm(manifest.TypeBundle, "op", "1.0.0", "src.example.com/shared:1"),
		pm("fakechart", "web", "2.0.0", "src.example.com/sidecar:1"),
		pm("fakechart", "web", "2.1.0"),                  // missing
		pm("fakechart", "db", "1.0.0"),                   // the registry fails
		pm("fakechart", "cache", "1.0.0"),                // not selected
		pm("nosuchkind", "odd", "1.0.0"),                 // no kind registered
		pm(manifest.TypeBundle, "old", "0.1.0", "r/x:1"), // not selected
	}
	cluster := func() []*model.Version {
		vs := model.NewVersions(ms)
		for _, v := range vs {
			v.Changed = v.Manifest.Artifact != "cache" && v.Manifest.Artifact != "old"
		}
		return model.ChangedVersions(vs)
	}
	cache := kind.NewCache()
	first := cluster()
	err := cache.Read(context.Background(), kind.Env{}, first)
	if err == nil || !strings.Contains(err.Error(), "packages/db/1.0.0/manifest.yaml:7: registry down") {
		t.Errorf("the registry failure is not returned: %v", err)
	}
	var ie *model.InputError
	if !errors.As(err, &ie) || !strings.Contains(ie.Error(), `packages/odd/1.0.0/manifest.yaml:6: spec.type "nosuchkind": no such kind of package`) {
		t.Errorf("the version of no kind is not an input error at its spec.type: %v", err)
	}
	if want := []string{"src.example.com/op:1.0.0"}; !reflect.DeepEqual(bundles.reads, want) {
		t.Errorf("bundles read %v, want %v", bundles.reads, want)
	}
	if want := []string{"src.example.com/web:2.0.0", "src.example.com/web:2.1.0", "src.example.com/db:1.0.0"}; !reflect.DeepEqual(charts.reads, want) {
		t.Errorf("charts read %v, want %v (the versions of one kind together)", charts.reads, want)
	}

	// A second cluster of the run reads again only what failed at the registry.
	second := cluster()
	if err := cache.Read(context.Background(), kind.Env{}, second); err == nil {
		t.Error("the registry failure is remembered")
	}
	if n := len(bundles.reads) + len(charts.reads); n != 5 {
		t.Errorf("%d reads after the second cluster, want 5 (db read again): bundles %v, charts %v", n, bundles.reads, charts.reads)
	}

	for _, vs := range [][]*model.Version{first, second} {
		op, web, missing, db, odd := vs[0], vs[1], vs[2], vs[3], vs[4]
		if want := []string{"src.example.com/shared:1", "src.example.com/operator:1"}; !reflect.DeepEqual(op.Images, want) {
			t.Errorf("bundle images %v, want %v", op.Images, want)
		}
		if want := []string{"src.example.com/sidecar:1", "src.example.com/nginx:1", "src.example.com/shared:1"}; !reflect.DeepEqual(web.Images, want) {
			t.Errorf("chart images %v, want %v", web.Images, want)
		}
		if name, _ := web.Content.Info(); name != "from the fakechart" || web.Content.ImagesFrom() != "the fakechart's templates" {
			t.Errorf("chart content %+v", web.Content)
		}
		if kind.BundleOf(web) != nil || kind.BundleOf(op) != nil {
			t.Error("BundleOf gives a bundle of content that is none")
		}
		if missing.Content != nil || missing.ReadErr == nil || !missing.Read() {
			t.Errorf("the missing chart: content %v, error %v", missing.Content, missing.ReadErr)
		}
		if db.Read() || odd.Read() {
			t.Error("a version the registry or the registry of kinds failed is read")
		}
		var failed []string
		for _, v := range vs {
			if v.ReadErr != nil {
				failed = append(failed, v.Manifest.Path)
			}
		}
		if want := []string{"packages/web/2.1.0/manifest.yaml"}; !reflect.DeepEqual(failed, want) {
			t.Errorf("read errors of %v, want %v", failed, want)
		}
	}

	var in lint.Input
	kind.Lint(&in, kind.Env{}, first)
	if want := []string{"packages/op/1.0.0/manifest.yaml"}; !reflect.DeepEqual(bundles.linted, want) {
		t.Errorf("bundles linted %v, want %v", bundles.linted, want)
	}
	if len(charts.linted) != 3 {
		t.Errorf("charts linted %v, want the three selected", charts.linted)
	}
}

// TestRegister: Register replaces a kind of the same name and restore puts
// the registry back; the bundle kind is registered under spec.type bundle,
// which a manifest made without spec.type gets.
func TestRegister(t *testing.T) {
	k, ok := kind.Lookup(manifest.TypeBundle)
	if !ok || k.Name() != manifest.TypeBundle {
		t.Fatalf("no bundle kind: %v", k)
	}
	v := model.NewVersions([]*manifest.PackageManifest{pm("", "a", "1.0.0")})[0]
	if got, err := kind.Of(v); err != nil || got != k {
		t.Errorf("the kind of a manifest without spec.type: %v, %v", got, err)
	}
	fake := &fakeKind{name: manifest.TypeBundle}
	restore := kind.Register(fake)
	if got, _ := kind.Lookup(manifest.TypeBundle); got != fake {
		t.Error("Register did not replace the bundle kind")
	}
	restore()
	if got, _ := kind.Lookup(manifest.TypeBundle); got != k {
		t.Error("restore did not put the bundle kind back")
	}
	restore = kind.Register(&fakeKind{name: "x"})
	restore()
	if _, ok := kind.Lookup("x"); ok {
		t.Error("restore left a new kind registered")
	}
}

// clusterKind is a kind of package whose content depends on the cluster it
// is read for (as a chart rendered with each cluster's values does): its
// key holds the cluster, and it records what each Read and Lint was for.
type clusterKind struct {
	mu     sync.Mutex
	reads  []string // "cluster ref"
	linted []string // "cluster path"
}

func (k *clusterKind) Name() string { return "percluster" }
func (k *clusterKind) Key(env kind.Env, v *model.Version) string {
	return env.Cluster + "\x00" + v.Ref()
}

func (k *clusterKind) Read(_ context.Context, env kind.Env, vs []*model.Version) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, v := range vs {
		k.reads = append(k.reads, env.Cluster+" "+v.Ref())
		v.SetContent(fakeContent{kind: k.Name(), images: []string{"src.example.com/app-" + env.Cluster + ":1"}})
	}
	return nil
}

func (k *clusterKind) Lint(_ *lint.Input, env kind.Env, v *model.Version) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.linted = append(k.linted, env.Cluster+" "+v.Manifest.Path)
}

// TestKindPerCluster: a kind reads and lints for the cluster of kind.Env,
// and the run's cache keeps what it read per cluster when the kind's key
// says so, while the bundles, whose key is the same for every cluster, are
// read once for all.
func TestKindPerCluster(t *testing.T) {
	bundles := &fakeKind{name: manifest.TypeBundle, deploys: map[string][]string{"src.example.com/op:1.0.0": {"src.example.com/operator:1"}}}
	per := &clusterKind{}
	defer kind.Register(bundles)()
	defer kind.Register(per)()
	ms := []*manifest.PackageManifest{pm(manifest.TypeBundle, "op", "1.0.0"), pm("percluster", "web", "2.0.0")}
	cache := kind.NewCache()
	got := map[string][]string{}
	for _, cluster := range []string{"lab", "prod", "lab"} {
		vs := model.NewVersions(ms)
		env := kind.Env{Cluster: cluster}
		if err := cache.Read(context.Background(), env, vs); err != nil {
			t.Fatal(err)
		}
		kind.Lint(&lint.Input{}, env, vs)
		got[cluster] = vs[1].Images
		if want := []string{"src.example.com/operator:1"}; !reflect.DeepEqual(vs[0].Images, want) {
			t.Errorf("cluster %s: bundle images %v, want %v", cluster, vs[0].Images, want)
		}
	}
	if want := []string{"lab src.example.com/web:2.0.0", "prod src.example.com/web:2.0.0"}; !reflect.DeepEqual(per.reads, want) {
		t.Errorf("per-cluster reads %v, want %v (once per cluster)", per.reads, want)
	}
	if len(bundles.reads) != 1 {
		t.Errorf("the bundle was read %d times, want once for every cluster", len(bundles.reads))
	}
	if got["lab"][0] != "src.example.com/app-lab:1" || got["prod"][0] != "src.example.com/app-prod:1" {
		t.Errorf("images by cluster %v", got)
	}
	if want := []string{"lab packages/web/2.0.0/manifest.yaml", "prod packages/web/2.0.0/manifest.yaml", "lab packages/web/2.0.0/manifest.yaml"}; !reflect.DeepEqual(per.linted, want) {
		t.Errorf("linted %v, want %v", per.linted, want)
	}
}
