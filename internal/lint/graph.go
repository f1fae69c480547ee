package lint

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/manifest"
)

// AnnotationSkipRange is the CSV annotation of OLM's skipRange.
const AnnotationSkipRange = "olm.skipRange"

var csvVersionRE = regexp.MustCompile(`(?:^|[^0-9])v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)$`)

// csvNameVersion returns the version at the end of a CSV name
// (etcdoperator.v0.9.4: 0.9.4).
func csvNameVersion(n string) (semver.Version, bool) {
	m := csvVersionRE.FindStringSubmatch(n)
	if m == nil {
		return semver.Version{}, false
	}
	v, err := semver.Parse(m[1])
	return v, err == nil
}

// graphRules checks the upgrade graph of every artifact: replaces, skips
// and olm.skipRange of the CSVs against the artifact's versions.
func graphRules(ms []*manifest.PackageManifest, byPath map[string]*mfile, bundles map[string]*bundle.Bundle) []Finding {
	var out []Finding
	for start := 0; start < len(ms); {
		end := start + 1
		for end < len(ms) && ms[end].Artifact == ms[start].Artifact {
			end++
		}
		out = append(out, artifactGraph(ms[start:end], byPath, bundles)...)
		start = end
	}
	return out
}

// artifactGraph checks the versions ms (sorted) of one artifact.
func artifactGraph(ms []*manifest.PackageManifest, byPath map[string]*mfile, bundles map[string]*bundle.Bundle) []Finding {
	names := map[string]semver.Version{} // CSV name -> manifest version, for loaded bundles
	csvOf := map[string]string{}         // version -> CSV name ("" when not loaded)
	allLoaded := true
	var versions []string
	for _, m := range ms {
		v := m.Version.String()
		versions = append(versions, v)
		if b := bundles[m.Path]; b != nil && b.CSV != nil {
			names[b.CSVName] = m.Version
			if _, ok := csvOf[v]; !ok {
				csvOf[v] = b.CSVName
			}
		} else {
			allLoaded = false
			if _, ok := csvOf[v]; !ok {
				csvOf[v] = ""
			}
		}
	}
	oldest := ms[0].Version
	list := strings.Join(versions, ", ")
	if len(versions) > 10 {
		list = strings.Join(versions[:10], ", ") + ", …"
	}
	artifact := ms[0].Artifact

	// target returns why CSV name t (replaced when replaces, else skipped)
	// by version own is not a version of the artifact, or "".
	target := func(t string, own semver.Version, replaces bool) string {
		if v, ok := names[t]; ok {
			if replaces && v.GTE(own) {
				return fmt.Sprintf("names %s (version %s), which is not older than %s", t, v, own)
			}
			return ""
		}
		v, ok := csvNameVersion(t)
		if !ok {
			if allLoaded {
				return fmt.Sprintf("names %s, which is the CSV of no version of %s in the repository (%s)", t, artifact, list)
			}
			return ""
		}
		if replaces && v.GTE(own) {
			return fmt.Sprintf("names %s (version %s), which is not older than %s", t, v, own)
		}
		if csv, ok := csvOf[v.String()]; ok {
			if csv != "" {
				return fmt.Sprintf("names %s, but the CSV of version %s is %s", t, v, csv)
			}
			return "" // that version's bundle was not read
		}
		if v.LT(oldest) {
			return "" // the graph starts before the repository's oldest version
		}
		return fmt.Sprintf("names %s (version %s), which is not a version of %s in the repository (%s)", t, v, artifact, list)
	}

	var out []Finding
	channels := map[string]bool{}
	for _, m := range ms {
		if f := byPath[m.Path]; f != nil {
			for _, c := range f.channels {
				channels[c] = true
			}
		}
	}
	for _, m := range ms {
		b := bundles[m.Path]
		f := byPath[m.Path]
		if b == nil || b.CSV == nil || f == nil {
			continue
		}
		if d := f.defaultChannel; d != "" && len(f.channels) > 0 && !channels[d] {
			out = append(out, f.bundleFinding(RuleBundleDefaultChannel, bundleAnnotationsPath,
				fmt.Sprintf("default channel %q is not a channel of this bundle (%s) nor of any other version of %s read", d, strings.Join(f.channels, ", "), artifact), ""))
		}
		if sr, ok := b.CSV.Annotations[AnnotationSkipRange]; ok {
			if _, err := semver.ParseRange(sr); err != nil {
				out = append(out, f.bundleFinding(RuleSkipRange, bundleManifestsPath, fmt.Sprintf("CSV annotation %s %q is not a semver range: %v", AnnotationSkipRange, sr, err), ""))
			}
		}
		if r := strings.TrimSpace(b.CSV.Spec.Replaces); r != "" {
			if msg := target(r, m.Version, true); msg != "" {
				out = append(out, f.bundleFinding(RuleReplaces, bundleManifestsPath, "the CSV's spec.replaces "+msg, ""))
			}
		}
		for _, s := range b.CSV.Spec.Skips {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			if msg := target(s, m.Version, false); msg != "" {
				out = append(out, f.bundleFinding(RuleSkips, bundleManifestsPath, "the CSV's spec.skips "+msg, ""))
			}
		}
	}
	return out
}
