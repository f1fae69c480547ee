package olm

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	semver "github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-publish/publish/internal/bundle"
)

// sortVersions sorts vs, the bundles of one package, as opm v1.73.0 orders
// them (declcfg.Bundle.Compare, alpha/declcfg/declcfg.go): by spec.version,
// then by release, a bundle without one first. The release is the CSV's
// spec.release (the olm.package property's release); without one, a CSV
// with the olm.substitutesFor annotation takes spec.version's build
// metadata as its release (1.2.3+2: version 1.2.3, release 2). The error
// names both sources of every two bundles equal in version and release,
// which opm cannot order (nor OLM upgrade between).
func sortVersions(vs []versioned) error {
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].version.Compare(vs[j].version) < 0 })
	var errs []error
	for i := 1; i < len(vs); i++ {
		if vs[i-1].version.Compare(vs[i].version) == 0 {
			errs = append(errs, fmt.Errorf("%s and %s: bundles %s and %s have the same version and release (%s): opm cannot order them; give the rebuild a higher CSV spec.release", vs[i-1].source, vs[i].source, vs[i-1].name, vs[i].name, VersionString(vs[i].version.Version.String(), vs[i].version.Release.String())))
		}
	}
	return errors.Join(errs...)
}

// VersionString is a bundle's version and release as opm writes them
// (model.Bundle.VersionString): "1.2.3", or "1.2.3-2" with release 2.
func VersionString(version, release string) string {
	if release == "" {
		return version
	}
	return strings.Join([]string{version, release}, "-")
}

// BundleVersion returns the version and release opm v1.73.0 orders bundle b
// of package pkg by (declcfg.Bundle.VersionRelease of the olm.package
// property opm renders for it, with its olm.substitutesFor annotation):
// see sortVersions. The error is opm's: a version that is no semantic
// version, a release that is no release.
func BundleVersion(pkg string, b *bundle.Bundle) (*declcfg.VersionRelease, error) {
	csv, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{bundle.AnnotationSubstitutesFor: b.SubstitutesFor}}})
	if err != nil {
		return nil, err
	}
	db := declcfg.Bundle{Name: b.CSVName, Properties: []property.Property{property.MustBuildPackageRelease(pkg, b.Version, b.Release)}, CsvJSON: string(csv)}
	return db.VersionRelease()
}

// ReleaseProblems returns what opm v1.73.0 refuses in the release of bundle
// b, each a sentence naming the field: a spec.release that
// is not dot-separated identifiers of letters, digits and hyphens without
// leading zeros, at most 20 characters (model.NewRelease); spec.release
// with the olm.substitutesFor annotation (pkg/lib/validation/bundle.go);
// spec.release with build metadata in spec.version (model.Bundle.Validate).
// The CSV name opm wants with a release, <package>-v<version>-<release>,
// operator-framework/api's bundle validator checks already (lint's
// bundle/validator/bundle).
func ReleaseProblems(b *bundle.Bundle) []string {
	if b.Release == "" {
		return nil
	}
	var out []string
	if _, err := declcfg.NewRelease(b.Release); err != nil {
		out = append(out, fmt.Sprintf("spec.release %q: %v", b.Release, err))
	}
	if b.SubstitutesFor != "" {
		out = append(out, fmt.Sprintf("spec.release %q and the annotation %s %q: a bundle has one or the other", b.Release, bundle.AnnotationSubstitutesFor, b.SubstitutesFor))
	}
	v, err := semver.Parse(b.Version)
	if err == nil && len(v.Build) > 0 {
		out = append(out, fmt.Sprintf("spec.version %s has build metadata and spec.release %q is set: drop the build metadata", b.Version, b.Release))
	}
	return out
}
