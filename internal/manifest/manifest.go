// Package manifest reads PackageManifest files: the violet-compatible
// description of one version of one operator (docs/design.md#package-manifest).
//
//	apiVersion: app.alauda.cn/v1beta1
//	kind: PackageManifest
//	metadata:
//	  name: <artifact>.v<version>
//	spec:
//	  type: bundle                 # or chart (a Helm chart)
//	  artifact: <bundle image reference>  # a chart: oci://host/repo/name:version, or https://charts.example.com
//	  chart: <chart name>          # a chart from a chart repository only
//	  version: v<semver>
//	  arch: [linux/amd64]
//	  info: {displayName, icon, keywords, links: [{name, url}], description}
//	  relatedImages: [<image reference>, ...]
//	  deprecation: {message}
//
// Parsing is strict: an unknown field, a value of the wrong type or a missing
// required field is an error that names the file and the line.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/blang/semver/v4"
	yaml "go.yaml.in/yaml/v4"

	"github.com/operator-publish/publish/internal/registry"
)

// APIVersion and Kind identify a PackageManifest document.
const (
	APIVersion = "app.alauda.cn/v1beta1"
	Kind       = "PackageManifest"
)

// The values of spec.type, the kind of package a manifest publishes (the
// names violet writes): TypeBundle, an OLM bundle image; TypeChart, a Helm
// chart (read and linted; docs/charts.md says what is published of it).
const (
	TypeBundle = "bundle"
	TypeChart  = "chart"
)

// PackageManifest is one version of one operator, as written in a package
// repo. Field names follow violet's PackageManifest.
type PackageManifest struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   Metadata `yaml:"metadata"`
	Spec       Spec     `yaml:"spec"`

	// Path is the file the manifest was read from (set by Parse/Load).
	Path string `yaml:"-"`
	// Artifact is the artifact (OLM package) name derived from metadata.name.
	Artifact string `yaml:"-"`
	// Version is spec.version without a leading "v", a valid semver.
	Version semver.Version `yaml:"-"`
	// Lines maps a dotted field path ("spec.artifact", "spec.relatedImages.2")
	// to its 1-based line in Path, for error messages and lint findings.
	Lines map[string]int `yaml:"-"`
}

// Metadata is the object metadata of a PackageManifest.
type Metadata struct {
	Name        string            `yaml:"name"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// Spec is the PackageManifest spec.
type Spec struct {
	// Type is "bundle" (an OLM bundle image) or "chart" (a Helm chart).
	Type string `yaml:"type"`
	// Artifact is the bundle image reference in the source registry; for
	// a chart, the OCI chart reference or the chart repository URL
	// (ParseChartSource).
	Artifact string `yaml:"artifact"`
	// Chart is the chart's name in the chart repository Artifact names
	// (spec.type chart with a classic repository only).
	Chart string `yaml:"chart,omitempty"`
	// Version is the operator version, semver, with or without a leading "v".
	Version string `yaml:"version"`
	// Arch lists the platforms (os/arch[/variant]) the operator supports.
	Arch []string `yaml:"arch,omitempty"`
	// Info is what the OperatorHub page shows.
	Info Info `yaml:"info"`
	// RelatedImages lists every image the operator needs.
	RelatedImages []string `yaml:"relatedImages,omitempty"`
	// Deprecation, when its message is set, deprecates the version on
	// the OLM target (an olm.deprecations entry while it is listed, kept
	// when it is delisted; docs/olm.md).
	Deprecation Deprecation `yaml:"deprecation,omitempty"`
}

// Deprecation is spec.deprecation of a PackageManifest.
type Deprecation struct {
	// Message is what OLM shows of the deprecated version (the
	// olm.deprecations entry's message).
	Message string `yaml:"message,omitempty"`
}

// Info is the display information of a PackageManifest.
type Info struct {
	DisplayName string   `yaml:"displayName"`
	Icon        string   `yaml:"icon,omitempty"`
	Keywords    []string `yaml:"keywords,omitempty"`
	Links       []Link   `yaml:"links,omitempty"`
	Description string   `yaml:"description,omitempty"`
}

// Link is a named URL shown on the OperatorHub page.
type Link struct {
	Name string `yaml:"name"`
	URL  string `yaml:"url"`
}

// Error is a problem in one manifest file, at a 1-based line (0: unknown).
// It is an input error: the user must fix the file.
type Error struct {
	Path string
	Line int
	Msg  string
	// Err is the class of the problem when it has one (ErrNotRegular,
	// ErrTooLarge), for errors.Is; nil for a problem in the content.
	Err error
}

// Unwrap returns e.Err.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Tag returns the tag the bundle carries at the destination: the tag of
// spec.artifact, or "v<version>" when spec.artifact is pinned by digest only.
// ArtifactVersion.spec.tag is this value. A chart's is the tag of its OCI
// reference (ChartSource.Reference: a classic repository's chart is
// tagged with its version).
func (m *PackageManifest) Tag() string {
	ref := m.Spec.Artifact
	if m.Spec.Type == TypeChart {
		if src, err := ParseChartSource(m.Spec.Artifact, m.Spec.Chart); err == nil {
			ref = src.Reference(m.Version.String())
		}
	}
	if t := tagOf(ref); t != "" {
		return t
	}
	return "v" + m.Version.String()
}

// tagOf returns the tag of an image reference ("" when it has none):
// "host:5000/a/b:v1@sha256:..." gives "v1".
func tagOf(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[i+1:]
	}
	return ""
}

// Parse decodes one PackageManifest from data (the content of path) strictly
// and checks the fields the pipeline depends on. It returns an *Error naming
// path and line for: not exactly one YAML document, an unknown field, a value
// of the wrong type, a wrong apiVersion/kind, a missing required field
// (metadata.name, spec.type, spec.artifact, spec.version), a version that is
// not semver, an unknown spec.type, a bundle reference that does not
// parse, a chart source that does not (ParseChartSource), spec.chart on a
// bundle, and a metadata.name that is not "<artifact>.v<version>".
func Parse(path string, data []byte) (*PackageManifest, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return nil, yamlError(path, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{Path: path, Line: extra.Line, Msg: "more than one YAML document: a manifest.yaml holds exactly one PackageManifest"}
	}
	m := &PackageManifest{Path: path, Lines: map[string]int{}}
	if len(root.Content) > 0 {
		recordLines(root.Content[0], "", m.Lines)
	}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(m); err != nil {
		return nil, withField(yamlError(path, err), m.Lines)
	}
	line := func(p string) int {
		for p != "" {
			if l, ok := m.Lines[p]; ok {
				return l
			}
			i := strings.LastIndex(p, ".")
			if i < 0 {
				break
			}
			p = p[:i]
		}
		return 1
	}
	fail := func(field, format string, args ...any) error {
		return &Error{Path: path, Line: line(field), Msg: fmt.Sprintf(format, args...)}
	}
	if m.APIVersion != APIVersion || m.Kind != Kind {
		return nil, fail("apiVersion", "apiVersion/kind is %q/%q, want %s/%s", m.APIVersion, m.Kind, APIVersion, Kind)
	}
	for _, f := range []struct{ field, value string }{
		{"metadata.name", m.Metadata.Name},
		{"spec.type", m.Spec.Type},
		{"spec.artifact", m.Spec.Artifact},
		{"spec.version", m.Spec.Version},
	} {
		if strings.TrimSpace(f.value) == "" {
			return nil, fail(f.field, "%s field cannot be empty", f.field)
		}
	}
	switch m.Spec.Type {
	case TypeBundle, TypeChart:
	default:
		return nil, fail("spec.type", "spec.type %q is not valid: use bundle or chart", m.Spec.Type)
	}
	v, err := semver.Parse(strings.TrimPrefix(m.Spec.Version, "v"))
	if err != nil {
		return nil, fail("spec.version", "spec.version %q is not a semantic version (e.g. v1.2.3): %v", m.Spec.Version, err)
	}
	m.Version = v
	if m.Spec.Type == TypeChart {
		if _, err := ParseChartSource(m.Spec.Artifact, m.Spec.Chart); err != nil {
			return nil, fail(FieldOf(err), "%v", err)
		}
	} else {
		if m.Spec.Chart != "" {
			return nil, fail("spec.chart", "spec.chart is for spec.type chart (a chart in a chart repository): remove it from a bundle")
		}
		if _, err := registry.ParseStrict(m.Spec.Artifact); err != nil {
			return nil, fail("spec.artifact", "spec.artifact %q is not a valid image reference with a tag or digest (e.g. registry.example.com/ns/op-bundle:v1.2.3): %v", m.Spec.Artifact, err)
		}
	}
	suffix := ".v" + v.String()
	if !strings.HasSuffix(m.Metadata.Name, suffix) || len(m.Metadata.Name) == len(suffix) {
		return nil, fail("metadata.name", "metadata.name %q must be <artifact>%s (the artifact name, then .v and spec.version)", m.Metadata.Name, suffix)
	}
	m.Artifact = strings.TrimSuffix(m.Metadata.Name, suffix)
	if errs := validArtifactName(m.Artifact); errs != "" {
		return nil, fail("metadata.name", "artifact name %q: %s", m.Artifact, errs)
	}
	for i, img := range m.Spec.RelatedImages {
		if _, err := registry.ParseStrict(img); err != nil {
			return nil, fail(fmt.Sprintf("spec.relatedImages.%d", i), "spec.relatedImages[%d] %q is not a valid image reference with a tag or digest: %v", i, img, err)
		}
	}
	return m, nil
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// validArtifactName checks that the artifact can name Kubernetes objects
// (a DNS-1123 subdomain, at most 253 characters).
func validArtifactName(s string) string {
	if len(s) > 253 || !dns1123.MatchString(s) {
		return "must be lowercase letters, digits, '-' and '.', starting and ending with a letter or digit (it names the Artifact object)"
	}
	return ""
}

// recordLines walks a YAML mapping and records the line of every key path.
func recordLines(n *yaml.Node, prefix string, lines map[string]int) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if prefix != "" {
				p = prefix + "." + k.Value
			}
			lines[p] = k.Line
			recordLines(v, p, lines)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s.%d", prefix, i)
			lines[p] = c.Line
			recordLines(c, p, lines)
		}
	}
}

// yamlError turns a go.yaml.in/yaml/v4 error into an *Error at the line
// of the offending token: construct (type) errors list every problem at
// the first one's line; syntax errors use YAMLSyntax.
func yamlError(path string, err error) error {
	var le *yaml.LoadErrors
	if errors.As(err, &le) && len(le.Errors) > 0 {
		msgs := make([]string, 0, len(le.Errors))
		for _, e := range le.Errors {
			msgs = append(msgs, fixTypeMsg(e.Message))
		}
		return &Error{Path: path, Line: le.Errors[0].Mark.Line, Msg: strings.Join(msgs, "; ")}
	}
	if errors.Is(err, io.EOF) {
		return &Error{Path: path, Msg: "empty file: a manifest.yaml holds one PackageManifest"}
	}
	if se, ok := YAMLSyntax(err); ok {
		return &Error{Path: path, Line: se.Line, Msg: "not valid YAML: " + se.Msg}
	}
	return &Error{Path: path, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
}

// withField names the field of a type error ("cannot construct … into
// []string" says nothing of where): the deepest key path on that line.
func withField(err error, lines map[string]int) error {
	var e *Error
	if !errors.As(err, &e) || e.Line == 0 || !strings.Contains(e.Msg, "cannot construct") {
		return err
	}
	best := ""
	for p, l := range lines {
		if l == e.Line && len(p) > len(best) {
			best = p
		}
	}
	if best != "" {
		e.Msg = best + ": " + e.Msg
	}
	return e
}

// fixTypeMsg rewrites yaml v4's Go-flavoured messages (a LoadError's
// Message, no position in it) into manifest terms.
func fixTypeMsg(s string) string {
	if strings.HasPrefix(s, "field ") {
		s = "unknown " + s
	}
	if i := strings.Index(s, " not found in type "); i >= 0 {
		s = s[:i] + " (check the spelling; see the PackageManifest fields in the README)"
	}
	s = strings.ReplaceAll(s, "manifest.", "")
	return s
}
