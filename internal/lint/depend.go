package lint

import (
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/olm"
)

// Listing is what one cluster lists once the run publishes: what
// dependency/missing checks the dependencies of the bundles read
// (Input.Bundles) against. Every bundle of Input.Bundles must be of a
// version the cluster lists.
type Listing struct {
	// Cluster names the cluster, for the messages.
	Cluster string
	// Versions returns the versions (semver, a leading "v" allowed) the
	// cluster lists of the artifact pkg (an artifact is named after its
	// OLM package) once the run publishes: those of the package repo its
	// selection takes and those its state lists that the run leaves as
	// they are. None when it lists no version of pkg. The error says the
	// listing could not be read (a state entry that does not parse); it
	// becomes a finding.
	Versions func(pkg string) ([]string, error)
	// Complete says that every version the cluster lists has its bundle
	// in Input.Bundles: only then is a required GVK that none of them
	// provides missing. Otherwise a version not read in this run may
	// provide it (the state records no GVKs), and GVK requirements are not
	// checked.
	Complete bool
}

// dependencyRules checks, for the cluster of l (nil: no cluster, no
// finding), the dependencies of every bundle read (olm.BundleDependencies):
// an olm.package.required whose package the cluster lists in no version of
// the range, and, when l is Complete, an olm.gvk.required that no listed
// bundle provides, each at the manifest's spec.artifact line. A bundle
// whose dependencies cannot be read, a range that is not one and a listing
// that cannot be read are findings of the same rule.
func dependencyRules(l *Listing, ms []*manifest.PackageManifest, byPath map[string]*mfile, bundles map[string]*bundle.Bundle) []Finding {
	if l == nil {
		return nil
	}
	type read struct {
		f    *mfile
		b    *bundle.Bundle
		deps olm.Dependencies
	}
	var out []Finding
	var rs []read
	provided := map[property.GVK]bool{}
	for _, m := range ms {
		f, b := byPath[m.Path], bundles[m.Path]
		if f == nil || b == nil || b.CSV == nil {
			continue
		}
		d, err := olm.BundleDependencies(b)
		if err != nil {
			out = append(out, f.bundleFinding(RuleDependencyMissing, "", fmt.Sprintf("bundle %s: its dependencies cannot be read (%v): cluster %s cannot be checked for them", b.CSVName, err, l.Cluster), ""))
			continue
		}
		for _, g := range d.Provided {
			provided[g] = true
		}
		rs = append(rs, read{f, b, d})
	}
	for _, r := range rs {
		for _, p := range r.deps.Packages {
			if msg := l.missingPackage(p); msg != "" {
				out = append(out, r.f.bundleFinding(RuleDependencyMissing, bundleDependenciesPath, fmt.Sprintf("bundle %s requires package %s in range %q (olm.package.required): %s", r.b.CSVName, p.PackageName, p.VersionRange, msg), ""))
			}
		}
		if !l.Complete {
			continue
		}
		for _, g := range r.deps.GVKs {
			if !provided[g] {
				out = append(out, r.f.bundleFinding(RuleDependencyMissing, "", fmt.Sprintf("bundle %s requires %s (olm.gvk.required): no bundle cluster %s lists provides it", r.b.CSVName, gvkText(g), l.Cluster), ""))
			}
		}
	}
	return out
}

// bundleDependenciesPath is where a bundle declares package dependencies.
const bundleDependenciesPath = "metadata/dependencies.yaml"

// missingPackage says why the cluster of l does not satisfy p ("" when it
// does): a range that blang/semver cannot read (OLM's resolver and
// operator-registry read it with semver.ParseRange, the listed versions
// with semver.Parse), no version of the package listed, or none in the
// range.
func (l *Listing) missingPackage(p property.PackageRequired) string {
	in, err := semver.ParseRange(p.VersionRange)
	if err != nil {
		return fmt.Sprintf("the range is not a semver range OLM can read (%v): no version cluster %s lists can satisfy it", err, l.Cluster)
	}
	vs, err := l.Versions(p.PackageName)
	if err != nil {
		return fmt.Sprintf("what cluster %s lists of %s cannot be read: %v", l.Cluster, p.PackageName, err)
	}
	if len(vs) == 0 {
		return fmt.Sprintf("cluster %s lists no version of %s", l.Cluster, p.PackageName)
	}
	for _, v := range vs {
		if sv, err := semver.Parse(strings.TrimPrefix(v, "v")); err == nil && in(sv) {
			return ""
		}
	}
	return fmt.Sprintf("cluster %s lists %s %s, none in the range", l.Cluster, p.PackageName, strings.Join(vs, ", "))
}

// gvkText writes g as group/version, Kind=kind ("v1, Kind=kind" for the
// core group), as Kubernetes writes a GroupVersionKind.
func gvkText(g property.GVK) string {
	gv := g.Version
	if g.Group != "" {
		gv = g.Group + "/" + g.Version
	}
	return gv + ", Kind=" + g.Kind
}
