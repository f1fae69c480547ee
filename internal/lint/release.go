package lint

import (
	"fmt"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/olm"
)

// releaseRules checks the releases of the bundles read (opm v1.73.0's
// rules, olm.ReleaseProblems: bundle/release) and, per artifact, that no
// two bundles are equal in version and release as opm orders them
// (olm.BundleVersion: repo/duplicate-release, at both manifests; not
// for two manifests of one version, which repo/duplicate-version reports),
// and that no two have the same CSV name (repo/duplicate-csv-name, at both
// manifests). ms are sorted by artifact.
func releaseRules(ms []*manifest.PackageManifest, byPath map[string]*mfile, bundles map[string]*bundle.Bundle) []Finding {
	var out []Finding
	type seen struct {
		m    *manifest.PackageManifest
		name string
	}
	var group []seen
	check := func() {
		for i := range group {
			for j := range group {
				if i == j {
					continue
				}
				a, b := group[i], group[j]
				if a.m.Version.String() == b.m.Version.String() {
					continue // repo/duplicate-version says it
				}
				if a.name != "" && a.name == b.name {
					out = append(out, byPath[a.m.Path].bundleFinding(RuleDuplicateCSVName, bundleManifestsPath,
						fmt.Sprintf("the CSV name %s is also the CSV name of version %s (%s): a catalog holds one bundle per CSV name", a.name, b.m.Version, b.m.Path), ""))
				}
				va, _ := olm.BundleVersion(a.m.Artifact, bundles[a.m.Path])
				vb, _ := olm.BundleVersion(b.m.Artifact, bundles[b.m.Path])
				if va == nil || vb == nil || va.Compare(vb) != 0 {
					continue
				}
				out = append(out, byPath[a.m.Path].bundleFinding(RuleDuplicateRelease, bundleManifestsPath,
					fmt.Sprintf("the CSV %s has the version and release of %s in %s (%s): opm cannot order the two bundles", a.name, b.name, b.m.Path, olm.VersionString(va.Version.String(), va.Release.String())), ""))
			}
		}
		group = group[:0]
	}
	for i, m := range ms {
		if i > 0 && ms[i-1].Artifact != m.Artifact {
			check()
		}
		b, f := bundles[m.Path], byPath[m.Path]
		if b == nil || b.CSV == nil || f == nil {
			continue
		}
		for _, p := range olm.ReleaseProblems(b) {
			out = append(out, f.bundleFinding(RuleBundleRelease, bundleManifestsPath, p, ""))
		}
		group = append(group, seen{m: m, name: b.CSVName})
	}
	check()
	return out
}
