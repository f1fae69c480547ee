package target

import (
	"errors"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/olm"
)

func ownNamespaceVersion(art, v string, channels ...string) *model.Version {
	csv := &v1alpha1.ClusterServiceVersion{}
	csv.Spec.InstallModes = []v1alpha1.InstallMode{
		{Type: v1alpha1.InstallModeTypeOwnNamespace, Supported: true},
		{Type: v1alpha1.InstallModeTypeAllNamespaces, Supported: false},
	}
	m := &manifest.PackageManifest{Path: "packages/" + art + "/" + v + "/manifest.yaml", Artifact: art, Version: semver.MustParse(v), Lines: map[string]int{"spec.artifact": 7}}
	return &model.Version{Manifest: m, Content: kind.BundleContent(&bundle.Bundle{CSV: csv, CSVName: art + ".v" + v, Channels: channels})}
}

// TestOLMCheckBundles: a ClusterExtension that may pick a bundle without
// the AllNamespaces install mode, and sets no watchNamespace, is an input
// error at its publish.yaml entry; one whose version range leaves that
// bundle out, a watchNamespace that fits, or a cluster without OLM v1 is
// not.
func TestOLMCheckBundles(t *testing.T) {
	vs := []*model.Version{ownNamespaceVersion("etcd", "0.9.4", "alpha")}
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
		!strings.Contains(err.Error(), "set clusters.edge.olm.clusterExtensions[0].watchNamespace (to etcd") {
		t.Errorf("no watchNamespace: %v", err)
	}
	for name, o := range map[string]OLMOptions{
		"watchNamespace":    v1(olm.ExtensionOptions{Package: "etcd", Namespace: "etcd", WatchNamespace: "etcd"}),
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
