package lint

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/google/go-containerregistry/pkg/name"
	yaml "go.yaml.in/yaml/v3"

	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/registry"
)

// Known platforms (os/arch[/variant]) of spec.arch.
var knownPlatforms = map[string]bool{
	"linux/amd64": true, "linux/arm64": true, "linux/arm64/v8": true, "linux/arm/v7": true,
	"linux/arm/v6": true, "linux/arm/v5": true, "linux/ppc64le": true, "linux/s390x": true,
	"linux/386": true, "linux/riscv64": true, "linux/mips64le": true, "linux/loong64": true,
	"windows/amd64": true, "windows/arm64": true,
}

var platformAliases = map[string]string{
	"amd64": "linux/amd64", "x86_64": "linux/amd64", "linux/x86_64": "linux/amd64", "x86-64": "linux/amd64",
	"arm64": "linux/arm64", "aarch64": "linux/arm64", "linux/aarch64": "linux/arm64",
	"arm": "linux/arm/v7", "linux/arm": "linux/arm/v7", "armhf": "linux/arm/v7", "linux/armhf": "linux/arm/v7", "armv7": "linux/arm/v7", "linux/armv7": "linux/arm/v7",
	"ppc64le": "linux/ppc64le", "s390x": "linux/s390x", "386": "linux/386", "riscv64": "linux/riscv64",
}

// checkFields checks the values of the fields in this order, which is the
// order of the findings: identity, version and name, artifact, arch, related
// images, info.
// It reads f.vals, sets the derived fields of f and adds findings to f.
func (f *mfile) checkFields() {
	f.checkIdentity()
	f.checkVersionName()
	f.checkArtifact()
	f.checkArch()
	f.checkRelatedImages()
	f.checkInfo()
}

// checkIdentity checks apiVersion and kind, the required fields and
// spec.type. It reads f.vals and adds findings to f; it returns nothing.
func (f *mfile) checkIdentity() {
	av, _ := f.str("apiVersion")
	kd, _ := f.str("kind")
	if av != manifest.APIVersion {
		f.addAt(RuleManifestAPIVersion, f.node("apiVersion"), fmt.Sprintf("apiVersion is %q, want %s", av, manifest.APIVersion), "")
	}
	if kd != manifest.Kind {
		f.addAt(RuleManifestAPIVersion, f.node("kind"), fmt.Sprintf("kind is %q, want %s", kd, manifest.Kind), "")
	}

	// Required fields, in violet's words.
	for _, p := range []string{"metadata.name", "spec.type", "spec.artifact", "spec.version"} {
		if s, _ := f.str(p); strings.TrimSpace(s) == "" {
			f.addAt(RuleManifestRequired, f.node(p), p+" field cannot be empty", "")
		}
	}

	// spec.type.
	if t, ok := f.str("spec.type"); ok && strings.TrimSpace(t) != "" {
		switch t {
		case manifest.TypeBundle, manifest.TypeChart:
		default:
			f.addAt(RuleManifestType, f.node("spec.type"), fmt.Sprintf("spec.type %q is not valid: use bundle or chart", t), "")
		}
	}
}

// checkVersionName checks spec.version (a semantic version) and
// metadata.name (<artifact>.v<version>). It reads f.vals, sets f.version and
// f.artifact when they can be derived, and adds findings to f.
func (f *mfile) checkVersionName() {
	var ver *semver.Version
	if s, ok := f.str("spec.version"); ok && strings.TrimSpace(s) != "" {
		if v, err := semver.Parse(strings.TrimPrefix(s, "v")); err != nil {
			f.addAt(RuleManifestVersion, f.node("spec.version"), fmt.Sprintf("spec.version %q is not a semantic version (e.g. v1.2.3): %v", s, err), "")
			f.version = s
		} else {
			ver = &v
			f.version = v.String()
		}
	}
	if n, ok := f.str("metadata.name"); ok && strings.TrimSpace(n) != "" && ver != nil {
		suffix := ".v" + ver.String()
		if !strings.HasSuffix(n, suffix) || len(n) == len(suffix) {
			f.addAt(RuleManifestName, f.node("metadata.name"), fmt.Sprintf("metadata.name %q must be <artifact>%s (the artifact name, then .v and spec.version)", n, suffix), "")
		} else {
			a := strings.TrimSuffix(n, suffix)
			f.artifact = a
			if len(a) > 253 || !dns1123.MatchString(a) {
				f.addAt(RuleManifestName, f.node("metadata.name"), fmt.Sprintf("artifact name %q: must be lowercase letters, digits, '-' and '.', starting and ending with a letter or digit (it names the Artifact object)", a), "")
			}
		}
	}
}

// checkArtifact checks that spec.artifact is a full image reference with a
// tag or digest, or for a chart a chart source with spec.chart
// (manifest.ParseChartSource). It reads f.vals and adds findings to f.
func (f *mfile) checkArtifact() {
	if t, _ := f.str("spec.type"); t == manifest.TypeChart {
		s, _ := f.str("spec.artifact")
		c, _ := f.str("spec.chart")
		if strings.TrimSpace(s) == "" {
			return // manifest/required
		}
		if _, err := manifest.ParseChartSource(s, c); err != nil {
			n := f.node(manifest.FieldOf(err))
			if n == nil {
				n = f.node("spec.artifact")
			}
			f.addAt(RuleManifestArtifact, n, err.Error(), "")
		}
		return
	}
	if c, ok := f.str("spec.chart"); ok && c != "" {
		f.addAt(RuleManifestArtifact, f.node("spec.chart"), "spec.chart is for spec.type chart (a chart in a chart repository): remove it from a bundle", "")
	}
	if s, ok := f.str("spec.artifact"); ok && strings.TrimSpace(s) != "" {
		if _, err := registry.ParseStrict(s); err != nil {
			msg := fmt.Sprintf("spec.artifact %q is not a valid image reference with a tag or digest (e.g. registry.example.com/ns/op-bundle:v1.2.3): %v", s, err)
			if full := fullReference(s); full != "" {
				msg = fmt.Sprintf("spec.artifact %q is not a full image reference: write %s", s, full)
			}
			f.addAt(RuleManifestArtifact, f.node("spec.artifact"), msg, "")
		}
	}
}

// checkArch checks each spec.arch entry against the known platforms and for
// duplicates. It reads f.vals, appends the good entries to f.arch and adds
// findings to f.
func (f *mfile) checkArch() {
	if a := f.vals["spec.arch"]; a != nil && a.Kind == yaml.SequenceNode {
		seen := map[string]bool{}
		for i := range a.Content {
			p := fmt.Sprintf("spec.arch.%d", i)
			s, ok := f.str(p)
			if !ok && f.vals[p] != nil && f.vals[p].Kind != yaml.ScalarNode {
				continue // field-type
			}
			switch {
			case strings.TrimSpace(s) == "":
				f.addAt(RuleManifestArch, f.node(p), fmt.Sprintf("spec.arch[%d] is empty", i), "")
			case !knownPlatforms[s]:
				msg := fmt.Sprintf("spec.arch[%d] %q is not a known platform (os/arch[/variant])", i, s)
				if al, ok := platformAliases[strings.ToLower(strings.TrimSpace(s))]; ok {
					msg += fmt.Sprintf(": did you mean %s?", al)
				}
				f.addAt(RuleManifestArch, f.node(p), msg, "")
			case seen[s]:
				f.addAt(RuleManifestArch, f.node(p), fmt.Sprintf("spec.arch lists %s twice", s), "Remove the duplicate entry.")
			default:
				f.arch = append(f.arch, s)
			}
			seen[s] = true
		}
	}
}

// checkRelatedImages checks each spec.relatedImages entry: set, a valid
// reference, not a duplicate, pinned by digest. It reads f.vals, appends
// to f.relatedText and f.related, and adds findings to f.
func (f *mfile) checkRelatedImages() {
	if ri := f.vals["spec.relatedImages"]; ri != nil && ri.Kind == yaml.SequenceNode {
		seen := map[string]int{}
		for i := range ri.Content {
			p := fmt.Sprintf("spec.relatedImages.%d", i)
			if v := f.vals[p]; v != nil && v.Kind != yaml.ScalarNode {
				continue // field-type
			}
			s, _ := f.str(p)
			if strings.TrimSpace(s) == "" {
				f.addAt(RuleManifestRelatedImage, f.node(p), fmt.Sprintf("spec.relatedImages[%d] is empty", i), "")
				continue
			}
			f.relatedText = append(f.relatedText, s)
			if _, err := registry.ParseStrict(s); err != nil {
				msg := fmt.Sprintf("spec.relatedImages[%d] %q is not a valid image reference with a tag or digest: %v", i, s, err)
				if full := fullReference(s); full != "" {
					msg = fmt.Sprintf("spec.relatedImages[%d] %q is not a full image reference: write %s", i, s, full)
				}
				f.addAt(RuleManifestRelatedImage, f.node(p), msg, "")
				continue
			}
			f.related = append(f.related, relatedImage{s, f.node(p)})
			if j, ok := seen[s]; ok {
				f.addAt(RuleManifestRelatedImageDup, f.node(p), fmt.Sprintf("spec.relatedImages[%d] %s is also spec.relatedImages[%d]", i, s, j), "")
				continue
			}
			seen[s] = i
			if !strings.Contains(s, "@") {
				f.addAt(RuleManifestRelatedImagePin, f.node(p), fmt.Sprintf("spec.relatedImages[%d] %s is not pinned by digest: the tag can move after review", i, s), "")
			}
		}
	}
}

// checkInfo checks spec.info: the display name, the sizes, the icon and
// the links. It reads f.vals and adds findings to f.
func (f *mfile) checkInfo() {
	if s, _ := f.str("spec.info.displayName"); strings.TrimSpace(s) == "" && (f.vals["spec.info.displayName"] == nil || f.vals["spec.info.displayName"].Kind == yaml.ScalarNode) {
		f.addAt(RuleManifestDisplayName, f.node("spec.info.displayName"), "spec.info.displayName is empty: the OperatorHub page has no name to show", "")
	}
	f.checkSizes()
	if s, ok := f.str("spec.info.icon"); ok && s != "" {
		if msg := checkIcon(s); msg != "" {
			f.addAt(RuleManifestIcon, f.node("spec.info.icon"), "spec.info.icon "+msg, "")
		}
	}
	if l := f.vals["spec.info.links"]; l != nil && l.Kind == yaml.SequenceNode {
		for i := range l.Content {
			p := fmt.Sprintf("spec.info.links.%d", i)
			if v := f.vals[p]; v != nil && !isNull(v) && v.Kind != yaml.MappingNode {
				continue // field-type
			}
			nm, _ := f.str(p + ".name")
			u, _ := f.str(p + ".url")
			if strings.TrimSpace(nm) == "" {
				f.addAt(RuleManifestLink, f.node(p+".name"), fmt.Sprintf("spec.info.links[%d] has no name", i), "")
			}
			if msg := checkURL(u); msg != "" {
				f.addAt(RuleManifestLink, f.node(p+".url"), fmt.Sprintf("spec.info.links[%d].url %s", i, msg), "")
			}
		}
	}
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// fullReference returns s with the registry, repository and tag defaults
// written out (memcached:1.5: docker.io/library/memcached:1.5) when s is a
// valid short reference, else "".
// FullImage returns the image reference ref written in full, as
// spec.relatedImages must write it (registry, repository, tag or digest:
// docker.io/library/nginx:1.27 for nginx:1.27), or ref itself when it is
// full already or cannot be completed (no tag, not a reference). The
// chart kind writes the images a chart renders this way.
func FullImage(ref string) string {
	if f := fullReference(ref); f != "" {
		return f
	}
	return ref
}

func fullReference(s string) string {
	r, err := name.ParseReference(s)
	if err != nil {
		return ""
	}
	if _, ok := r.(name.Tag); ok && !strings.Contains(s[strings.LastIndex(s, "/")+1:], ":") {
		return "" // no tag: do not suggest latest
	}
	repo := r.Context().RepositoryStr()
	full := r.Context().RegistryStr() + "/" + repo
	if r.Context().RegistryStr() == name.DefaultRegistry {
		full = "docker.io/" + repo
	}
	switch r := r.(type) {
	case name.Tag:
		full += ":" + r.TagStr()
	case name.Digest:
		full += "@" + r.DigestStr()
	}
	if _, err := name.ParseReference(full, name.StrictValidation); err != nil || full == s {
		return ""
	}
	return full
}
