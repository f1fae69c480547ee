package lint

import (
	"errors"
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/operator-publish/publish/internal/bundle"
)

// Files inside a bundle that bundle findings name in Finding.BundlePath.
// bundle.Bundle does not record the CSV's file name: CSV findings name the
// manifests/ directory.
const (
	bundleAnnotationsPath = "metadata/annotations.yaml"
	bundleManifestsPath   = "manifests/"
)

// Keys of metadata/annotations.yaml.
const (
	annMediatype = "operators.operatorframework.io.bundle.mediatype.v1"
	annManifests = "operators.operatorframework.io.bundle.manifests.v1"
	annMetadata  = "operators.operatorframework.io.bundle.metadata.v1"
	annPackage   = "operators.operatorframework.io.bundle.package.v1"
	annChannels  = "operators.operatorframework.io.bundle.channels.v1"
	annDefault   = "operators.operatorframework.io.bundle.channel.default.v1"
)

// bundleFinding makes a finding about the bundle of f: it points at
// spec.artifact, with bundlePath the file inside the bundle.
func (f *mfile) bundleFinding(rule, bundlePath, msg, hint string) Finding {
	line, col := 1, 1
	if n := f.node("spec.artifact"); n != nil {
		line, col = n.Line, n.Column
	}
	x := newFinding(rule, f.path, line, col, msg, hint)
	x.BundlePath = bundlePath
	x.Artifact, x.Version = f.artifact, f.version
	return x
}

// bundleError turns an error of reading the bundle into a finding.
func (f *mfile) bundleError(err error) Finding {
	var nf *bundle.NotFoundError
	var inv *bundle.InvalidError
	switch {
	case errors.As(err, &nf):
		return f.bundleFinding(RuleBundleNotFound, "", err.Error(), "")
	case errors.As(err, &inv):
		low := strings.ToLower(err.Error())
		if strings.Contains(low, "multiple csvs") || strings.Contains(low, "several csv") ||
			strings.Contains(low, "no clusterserviceversion") || strings.Contains(low, "unable to find a csv") {
			return f.bundleFinding(RuleBundleOneCSV, bundleManifestsPath, err.Error(), "")
		}
		hint := ""
		if strings.Contains(low, "cannot unmarshal bool") {
			hint = "A value such as yes, no, on or off loads as a boolean where text is expected: quote it. " + catalogByID[RuleBundleInvalid].Hint
		}
		return f.bundleFinding(RuleBundleInvalid, "", err.Error(), hint)
	}
	return f.bundleFinding(RuleBundleFetch, "", err.Error(), "")
}

// bundleRules runs the bundle, validator, platform and images (CSV) rules
// on the bundle of f. ann is the raw annotations.yaml, nil when unknown.
func (f *mfile) bundleRules(b *bundle.Bundle, ann map[string]string, k8s string) []Finding {
	var out []Finding
	add := func(rule, bp, msg, hint string) {
		out = append(out, f.bundleFinding(rule, bp, msg, hint))
	}
	lb := b.Loaded

	// Exactly one CSV (bundle.Load refuses several; a hand-made Bundle may not).
	if lb != nil {
		n := 0
		for _, o := range lb.Objects {
			if o != nil && o.GetKind() == v1alpha1.ClusterServiceVersionKind {
				n++
			}
		}
		if n > 1 {
			add(RuleBundleOneCSV, bundleManifestsPath, fmt.Sprintf("the bundle holds %d ClusterServiceVersions", n), "")
		}
	}
	if b.CSV == nil {
		add(RuleBundleOneCSV, bundleManifestsPath, "the bundle holds no ClusterServiceVersion", "")
		return out
	}

	// metadata/annotations.yaml.
	pkg := b.Package
	var channels []string
	if lb != nil {
		pkg, channels = lb.Package, lb.Channels
	}
	if ann != nil {
		if v := ann[annMediatype]; v != "registry+v1" {
			add(RuleBundleMediatype, bundleAnnotationsPath, fmt.Sprintf("%s is %q, want registry+v1", annMediatype, v), "")
		}
		if v := ann[annManifests]; v != "manifests/" {
			add(RuleBundleLayout, bundleAnnotationsPath, fmt.Sprintf("%s is %q, want manifests/", annManifests, v), "")
		}
		if v := ann[annMetadata]; v != "metadata/" {
			add(RuleBundleLayout, bundleAnnotationsPath, fmt.Sprintf("%s is %q, want metadata/", annMetadata, v), "")
		}
		pkg = ann[annPackage]
		channels = strings.Split(ann[annChannels], ",")
	}
	switch {
	case strings.TrimSpace(pkg) == "":
		add(RuleBundlePackage, bundleAnnotationsPath, fmt.Sprintf("the bundle has no package annotation (%s): metadata/annotations.yaml is missing or incomplete", annPackage), "")
	case pkg != f.artifact:
		add(RuleBundlePackage, bundleAnnotationsPath, fmt.Sprintf("the bundle's package is %q but the artifact (metadata.name) is %q: the Artifact is the OLM package, they must be the same", pkg, f.artifact), "")
	}
	var clean []string
	empty := 0
	for _, c := range channels {
		t := strings.TrimSpace(c)
		switch {
		case t == "":
			empty++
		case t != c:
			add(RuleBundleChannels, bundleAnnotationsPath, fmt.Sprintf("channel %q has spaces around its name", c), "")
		}
		if t != "" {
			clean = append(clean, t)
		}
	}
	switch {
	case len(clean) == 0:
		add(RuleBundleChannels, bundleAnnotationsPath, fmt.Sprintf("the bundle lists no channel (%s)", annChannels), "")
	case empty > 0:
		add(RuleBundleChannels, bundleAnnotationsPath, fmt.Sprintf("the channel list %q has %d empty entries", strings.Join(channels, ","), empty), "")
	}
	// The default channel is checked across the artifact's bundles
	// (graphRules): OLM takes it from the package, and a bundle may name a
	// default channel that other versions are in.
	f.channels, f.defaultChannel = bundleChannels(b, ann)

	// CSV version = manifest version; with a spec.release, the manifest
	// may say <version>+<release>, so that two rebuilds of one version are
	// two versions of the artifact.
	if b.Version == "" {
		add(RuleBundleCSVVersion, bundleManifestsPath, fmt.Sprintf("the CSV %s has no spec.version", b.CSVName), "")
	} else if mv, err := semver.Parse(strings.TrimPrefix(f.version, "v")); err == nil {
		if cv, err := semver.Parse(b.Version); err == nil && cv.String() != mv.String() && (b.Release == "" || cv.String()+"+"+b.Release != mv.String()) {
			add(RuleBundleCSVVersion, bundleManifestsPath, fmt.Sprintf("the CSV %s has spec.version %s but the manifest says %s", b.CSVName, cv, mv), "")
		}
	}

	for _, v := range runValidators(b, k8s) {
		x := f.bundleFinding(v.rule, bundleManifestsPath, v.msg, v.hint)
		x.Severity = v.sev
		out = append(out, x)
	}
	out = append(out, f.platformRules(b)...)
	out = append(out, f.imageRules(b)...)
	return out
}

// bundleChannels are the channels (trimmed, without empty entries) and
// the default channel of bundle b as OLM reads them: from
// metadata/annotations.yaml ann when known, else from what
// operator-framework loaded. graphRules checks the default channel across
// an artifact's bundles with them.
func bundleChannels(b *bundle.Bundle, ann map[string]string) (channels []string, def string) {
	var raw []string
	def = b.DefaultChannel
	if b.Loaded != nil {
		def, raw = b.Loaded.DefaultChannel, b.Loaded.Channels
	}
	if ann != nil {
		def, raw = ann[annDefault], strings.Split(ann[annChannels], ",")
	}
	for _, c := range raw {
		if t := strings.TrimSpace(c); t != "" {
			channels = append(channels, t)
		}
	}
	return channels, strings.TrimSpace(def)
}
