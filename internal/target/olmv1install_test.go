package target

import (
	"errors"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/render"
)

// namespacedVersion is version v of art whose CSV supports the install
// mode of types only.
func namespacedVersion(art, v string, types []v1alpha1.InstallModeType, channels ...string) *model.Version {
	csv := &v1alpha1.ClusterServiceVersion{}
	for _, ty := range types {
		csv.Spec.InstallModes = append(csv.Spec.InstallModes, v1alpha1.InstallMode{Type: ty, Supported: true})
	}
	csv.Spec.InstallModes = append(csv.Spec.InstallModes, v1alpha1.InstallMode{Type: v1alpha1.InstallModeTypeAllNamespaces, Supported: false})
	m := &manifest.PackageManifest{Path: "packages/" + art + "/" + v + "/manifest.yaml", Artifact: art, Version: semver.MustParse(v), Lines: map[string]int{"spec.artifact": 7}}
	return &model.Version{Manifest: m, Content: kind.BundleContent(&bundle.Bundle{CSV: csv, CSVName: art + ".v" + v, Version: v, Channels: channels})}
}

func ownNamespaceVersion(art, v string, channels ...string) *model.Version {
	return namespacedVersion(art, v, []v1alpha1.InstallModeType{v1alpha1.InstallModeTypeOwnNamespace}, channels...)
}

// TestOLMCheckBundles: a ClusterExtension that may pick a bundle that
// supports SingleNamespace only, and sets no watchNamespace, is an input
// error at its publish.yaml entry; one whose version range leaves that
// bundle out, a watchNamespace that fits, or a cluster without OLM v1 is
// not. A bundle that supports OwnNamespace but not AllNamespaces gets the
// install namespace (olm.DefaultWatchNamespace): no error.
func TestOLMCheckBundles(t *testing.T) {
	vs := []*model.Version{namespacedVersion("etcd", "0.9.4", []v1alpha1.InstallModeType{v1alpha1.InstallModeTypeSingleNamespace}, "alpha")}
	check := func(o OLMOptions) error {
		t.Helper()
		tg, err := New(OLM, Settings{Cluster: "edge", Own: o})
		if err != nil {
			t.Fatal(err)
		}
		return tg.(BundleChecker).CheckBundles(vs)
	}
	v1 := func(e olm.ExtensionOptions) OLMOptions {
		return OLMOptions{CatalogKinds: []string{KindClusterCatalog}, Extensions: []olm.ExtensionOptions{e}}
	}
	err := check(v1(olm.ExtensionOptions{Package: "etcd", Namespace: "etcd", Where: "publish.yaml:21"}))
	var ie *model.InputError
	if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), "publish.yaml:21: OLM v1 cannot install etcd 0.9.4 (etcd.v0.9.4, packages/etcd/0.9.4/manifest.yaml:7)") ||
		!strings.Contains(err.Error(), "set clusters.edge.olm.clusterExtensions[0].watchNamespace (to the one namespace the operator is to watch, other than etcd") {
		t.Errorf("no watchNamespace: %v", err)
	}
	for name, o := range map[string]OLMOptions{
		"watchNamespace":    v1(olm.ExtensionOptions{Package: "etcd", Namespace: "etcd", WatchNamespace: "apps"}),
		"version range":     v1(olm.ExtensionOptions{Package: "etcd", Namespace: "etcd", Version: ">=1.0.0"}),
		"other channel":     v1(olm.ExtensionOptions{Package: "etcd", Namespace: "etcd", Channels: []string{"stable"}}),
		"other package":     v1(olm.ExtensionOptions{Package: "flux", Namespace: "flux"}),
		"OLM v0 cluster":    {},
		"no ClusterCatalog": {CatalogKinds: []string{KindCatalogSource}},
	} {
		if err := check(o); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestOLMWatchNamespaceDefault: a ClusterExtension without watchNamespace
// whose package's bundles (within its channels and range) all support
// OwnNamespace, some not AllNamespaces, passes CheckBundles and is
// rendered with the install namespace as watchNamespace (watchNamespaces);
// publish render, which reads no bundle, keeps the one the last run
// rendered (watchNamespaceAt); an entry with its own watchNamespace, or
// whose bundles all support AllNamespaces, gets none derived.
func TestOLMWatchNamespaceDefault(t *testing.T) {
	own := ownNamespaceVersion("etcd", "0.9.4", "alpha")
	o := OLMOptions{CatalogKinds: []string{KindClusterCatalog}, Extensions: []olm.ExtensionOptions{
		{Package: "etcd", Namespace: "etcd"},
		{Name: "etcd-own", Package: "etcd", Namespace: "etcd", WatchNamespace: "etcd"},
		{Name: "etcd-stable", Package: "etcd", Namespace: "etcd", Channels: []string{"stable"}},
	}}
	tg, err := New(OLM, Settings{Cluster: "edge", Own: o})
	if err != nil {
		t.Fatal(err)
	}
	ot := tg.(*olmTarget)
	if err := ot.CheckBundles([]*model.Version{own}); err != nil {
		t.Fatalf("CheckBundles: %v", err)
	}
	pkgs := []olm.Package{{Name: "etcd", Entries: []olm.Entry{{Bundle: kind.BundleOf(own)}}}}
	if got := ot.watchNamespaces(pkgs); len(got) != 1 || got[0] != "etcd" {
		t.Errorf("watchNamespaces: %v, want [0: etcd]", got)
	}
	cat := render.Files{}
	image := "registry.local/olm/catalog@sha256:" + strings.Repeat("a", 64)
	if err := ot.writeObjects(cat, image, nil, nil, ot.watchNamespaces(pkgs)); err != nil {
		t.Fatal(err)
	}
	file := "rendered/edge/" + ClusterExtensionFile("etcd")
	if !strings.Contains(string(cat[file]), "    inline:\n      watchNamespace: etcd\n") || strings.Contains(string(cat["rendered/edge/"+ClusterExtensionFile("etcd-stable")]), "watchNamespace") {
		t.Errorf("rendered:\n%s", cat[file])
	}
	state := &gitops.State{Rendered: map[string]string{"edge": "olm " + image}}
	again := cat.Clone()
	if err := tg.RenderFromState(again, nil, state); err != nil {
		t.Fatal(err)
	}
	if string(again[file]) != string(cat[file]) {
		t.Errorf("publish render changed the ClusterExtension:\n%s\nwas\n%s", again[file], cat[file])
	}
}
