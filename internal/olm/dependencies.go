package olm

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/operator-publish/publish/internal/bundle"
)

// Dependencies is what one bundle provides to and requires of the other
// bundles of a catalog, as its olm.bundle entry carries it (BundleEntry)
// and OLM v0's resolver matches it: olm.gvk properties against
// olm.gvk.required, olm.package properties against olm.package.required
// (https://olm.operatorframework.io/docs/concepts/olm-architecture/dependency-resolution/).
type Dependencies struct {
	// Provided are the GVKs the bundle provides (olm.gvk): its CRDs,
	// the CSV's owned API services, and olm.gvk properties of
	// metadata/properties.yaml or the CSV's olm.properties annotation.
	Provided []property.GVK
	// GVKs are the GVKs the bundle requires (olm.gvk.required): the CSV's
	// spec.customresourcedefinitions.required and
	// spec.apiservicedefinitions.required, olm.gvk entries of
	// metadata/dependencies.yaml, and olm.gvk.required properties.
	GVKs []property.GVK
	// Packages are the packages the bundle requires
	// (olm.package.required): olm.package entries of
	// metadata/dependencies.yaml (their "version" is the range) and
	// olm.package.required properties. VersionRange is as written: a
	// blang/semver range, which operator-registry
	// (pkg/registry/types.go, PackageDependency.Validate) and OLM's
	// resolver read with semver.ParseRange.
	Packages []property.PackageRequired
}

// BundleDependencies returns the dependencies of bundle b, read as
// BundleEntry reads them for the catalog (metadata/dependencies.yaml and
// metadata/properties.yaml in the format of
// https://olm.operatorframework.io/docs/concepts/olm-architecture/dependency-resolution/
// and operator-registry's pkg/registry DependenciesFile, the CSV's
// required and owned APIs, the bundle's CRDs), each list sorted and
// without duplicates. Errors: a bundle without a loaded CSV, metadata
// files whose entries have no type or value, a value that is not the JSON
// of its type, a required CRD whose name is not <plural>.<group>.
func BundleDependencies(b *bundle.Bundle) (Dependencies, error) {
	if b == nil || b.Loaded == nil || b.CSV == nil {
		return Dependencies{}, errors.New("no ClusterServiceVersion")
	}
	fileProps, deps, err := metadataProperties(b.Metadata)
	if err != nil {
		return Dependencies{}, err
	}
	provided, _, others, err := bundleProperties(b.Package, b, fileProps)
	if err != nil {
		return Dependencies{}, err
	}
	required, pkgRequired, _, err := dependencyProperties(deps)
	if err != nil {
		return Dependencies{}, err
	}
	if err := apiGVKs(b, provided, required); err != nil {
		return Dependencies{}, err
	}
	pkgs := map[property.PackageRequired]bool{}
	for i, p := range append(pkgRequired, others...) {
		switch p.Type {
		case property.TypePackageRequired:
			var v property.PackageRequired
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return Dependencies{}, fmt.Errorf("property %d (%s): %v", i, p.Type, err)
			}
			pkgs[v] = true
		case property.TypeGVKRequired:
			var v property.GVK
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return Dependencies{}, fmt.Errorf("property %d (%s): %v", i, p.Type, err)
			}
			required[v] = true
		}
	}
	d := Dependencies{Provided: sortedGVKs(provided), GVKs: sortedGVKs(required)}
	for p := range pkgs {
		d.Packages = append(d.Packages, p)
	}
	sort.Slice(d.Packages, func(i, j int) bool {
		a, b := d.Packages[i], d.Packages[j]
		if a.PackageName != b.PackageName {
			return a.PackageName < b.PackageName
		}
		return a.VersionRange < b.VersionRange
	})
	return d, nil
}

// sortedGVKs lists the GVKs of set by group, version, kind.
func sortedGVKs(set map[property.GVK]bool) []property.GVK {
	out := make([]property.GVK, 0, len(set))
	for g := range set {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Kind < b.Kind
	})
	return out
}
