package bundle

import (
	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Slim drops from b what only the bundle's own lint rules and the OLM
// catalog read, keeping what the rules across versions (the upgrade graph,
// dependency/missing), the mirror and the Alauda render read: a read bundle
// is 1 to 3 MiB in memory, mostly its CRDs' schemas and the objects of
// Loaded, and a slim one some tens of KiB, so that a run over a whole
// catalog never holds every bundle at once.
//
// Kept: every field of Bundle but Loaded.Objects; Loaded's CRDs with their
// group, names, scope and versions (served, storage, deprecation) and
// without schemas, conversion or descriptions; the CSV's metadata (without
// the alm-examples annotation), version, release, replaces, skips, install modes,
// owned and required CRDs and API services (names, versions, kinds, without
// descriptors), min Kubernetes version, related images, labels, keywords,
// maintainers, provider, links and maturity. Dropped: the CSV's description,
// icon data, install strategy (its images are in Images), webhooks and
// native APIs.
//
// A slim bundle must not be linted again nor built into an OLM catalog
// (internal/olm needs the objects). Slim is idempotent; a nil b is a
// no-op.
func (b *Bundle) Slim() {
	if b == nil {
		return
	}
	b.CSV = slimCSV(b.CSV)
	if b.Loaded == nil {
		return
	}
	lb := &manifests.Bundle{
		Name: b.Loaded.Name, Package: b.Loaded.Package, Channels: b.Loaded.Channels,
		DefaultChannel: b.Loaded.DefaultChannel, BundleImage: b.Loaded.BundleImage,
		CSV: b.CSV, Dependencies: b.Loaded.Dependencies,
		CompressedSize: b.Loaded.CompressedSize, Size: b.Loaded.Size,
	}
	for _, c := range b.Loaded.V1CRDs {
		if c == nil {
			continue
		}
		s := &apiextensionsv1.CustomResourceDefinition{TypeMeta: c.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: c.Name}}
		s.Spec.Group, s.Spec.Names, s.Spec.Scope = c.Spec.Group, c.Spec.Names, c.Spec.Scope
		for _, v := range c.Spec.Versions {
			s.Spec.Versions = append(s.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
				Name: v.Name, Served: v.Served, Storage: v.Storage, Deprecated: v.Deprecated, DeprecationWarning: v.DeprecationWarning})
		}
		lb.V1CRDs = append(lb.V1CRDs, s)
	}
	for _, c := range b.Loaded.V1beta1CRDs {
		if c == nil {
			continue
		}
		s := &apiextensionsv1beta1.CustomResourceDefinition{TypeMeta: c.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: c.Name}}
		s.Spec.Group, s.Spec.Names, s.Spec.Scope, s.Spec.Version = c.Spec.Group, c.Spec.Names, c.Spec.Scope, c.Spec.Version
		for _, v := range c.Spec.Versions {
			s.Spec.Versions = append(s.Spec.Versions, apiextensionsv1beta1.CustomResourceDefinitionVersion{
				Name: v.Name, Served: v.Served, Storage: v.Storage, Deprecated: v.Deprecated, DeprecationWarning: v.DeprecationWarning})
		}
		lb.V1beta1CRDs = append(lb.V1beta1CRDs, s)
	}
	b.Loaded = lb
	b.crdKeys = nil
}

// slimCSV is the part of csv that Slim keeps (see there), in a new value;
// nil for nil.
func slimCSV(csv *v1alpha1.ClusterServiceVersion) *v1alpha1.ClusterServiceVersion {
	if csv == nil {
		return nil
	}
	s := &v1alpha1.ClusterServiceVersion{TypeMeta: csv.TypeMeta}
	s.Name, s.Namespace, s.Labels = csv.Name, csv.Namespace, csv.Labels
	if len(csv.Annotations) > 0 {
		s.Annotations = make(map[string]string, len(csv.Annotations))
		for k, v := range csv.Annotations {
			if k != "alm-examples" {
				s.Annotations[k] = v
			}
		}
	}
	in := &csv.Spec
	sp := &s.Spec
	sp.Version, sp.Release, sp.Replaces, sp.Skips, sp.MinKubeVersion = in.Version, in.Release, in.Replaces, in.Skips, in.MinKubeVersion
	sp.DisplayName, sp.Keywords, sp.Maintainers, sp.Provider, sp.Links, sp.Maturity = in.DisplayName, in.Keywords, in.Maintainers, in.Provider, in.Links, in.Maturity
	sp.InstallModes, sp.RelatedImages, sp.Labels, sp.Selector = in.InstallModes, in.RelatedImages, in.Labels, in.Selector
	sp.InstallStrategy.StrategyName = in.InstallStrategy.StrategyName
	for _, ic := range in.Icon {
		sp.Icon = append(sp.Icon, v1alpha1.Icon{MediaType: ic.MediaType})
	}
	crd := func(ds []v1alpha1.CRDDescription) []v1alpha1.CRDDescription {
		var out []v1alpha1.CRDDescription
		for _, d := range ds {
			out = append(out, v1alpha1.CRDDescription{Name: d.Name, Version: d.Version, Kind: d.Kind, DisplayName: d.DisplayName})
		}
		return out
	}
	api := func(ds []v1alpha1.APIServiceDescription) []v1alpha1.APIServiceDescription {
		var out []v1alpha1.APIServiceDescription
		for _, d := range ds {
			out = append(out, v1alpha1.APIServiceDescription{Name: d.Name, Group: d.Group, Version: d.Version, Kind: d.Kind, DisplayName: d.DisplayName})
		}
		return out
	}
	sp.CustomResourceDefinitions.Owned = crd(in.CustomResourceDefinitions.Owned)
	sp.CustomResourceDefinitions.Required = crd(in.CustomResourceDefinitions.Required)
	sp.APIServiceDefinitions.Owned = api(in.APIServiceDefinitions.Owned)
	sp.APIServiceDefinitions.Required = api(in.APIServiceDefinitions.Required)
	return s
}
