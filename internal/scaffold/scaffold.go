// Package scaffold writes the PackageManifest of a bundle image: `publish
// create` (violet create). It reads the bundle (internal/bundle) and the
// platforms of its image index, and writes a manifest that passes
// `publish lint`'s manifest rules (docs/design.md, the package repo),
// leaving out what of the CSV those rules would refuse.
package scaffold

import (
	"context"
	"errors"
	"fmt"
	"github.com/operator-publish/publish/internal/errclass"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	yaml "go.yaml.in/yaml/v3"
)

// Options configures Create.
type Options struct {
	Dir      string // where manifest.yaml is written (created if missing)
	Artifact string // bundle image reference; a chart: oci://... or a chart repository URL
	// Chart is the chart's name in the chart repository Artifact names
	// (a chart of a classic repository only); Version is the chart
	// version to read from it.
	Chart, Version string
	// Platforms for spec.arch; nil: every platform of the bundle's image
	// index (or the image's own platform).
	Platforms []string
	Force     bool // overwrite an existing manifest.yaml
	// Mirror holds the registry options: source credentials, CA file,
	// plain HTTP, retries. SrcHosts defaults to the bundle's registry.
	Mirror mirror.Options
	// Note, when set, is called once for each value of the CSV left out
	// of the manifest because a manifest rule would refuse it (the field,
	// why, the rule, what to do); `publish create` prints it.
	Note func(string)
}

// InputError is an error of the input, not of the infrastructure: the
// manifest exists already, a malformed reference, a bundle that does not
// exist or is not a bundle, a CSV without package name or version. The
// command exits 1 for it; for any other error 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// ErrorClass implements errclass.Classified: an input error.
func (e *InputError) ErrorClass() errclass.Class { return errclass.Input }

func inputErr(err error) error { return &InputError{Err: err} }

// Create reads the bundle image o.Artifact and writes Dir/manifest.yaml: a
// complete PackageManifest (metadata.name <package>.v<version>, spec.version
// from the CSV, info from the CSV: displayName, description, icon,
// keywords, links; relatedImages: every image the CSV deploys; arch from the
// image index). It returns the path written. The file parses with
// manifest.Parse and passes `publish lint`'s manifest rules: a CSV value
// they would refuse is left out and o.Note told (see Manifest). Errors:
// *InputError for the input (see there), else a registry or file error.
//
// A chart (Artifact oci://..., or a chart repository URL with Chart and
// Version) is written by createChart instead.
func Create(ctx context.Context, o Options) (string, error) {
	out := filepath.Join(o.Dir, "manifest.yaml")
	if _, err := os.Stat(out); err == nil && !o.Force {
		return "", inputErr(fmt.Errorf("%s exists: pass --force to overwrite it", out))
	}
	if isChart(o.Artifact) {
		return createChart(ctx, o, out)
	}
	ref, err := name.ParseReference(o.Artifact)
	if err != nil {
		return "", inputErr(fmt.Errorf("--artifact %q: %w", o.Artifact, err))
	}
	if o.Mirror.SrcHosts == nil {
		o.Mirror.SrcHosts = []string{ref.Context().RegistryStr()}
	}
	mc, err := mirror.New(o.Mirror)
	if err != nil {
		return "", inputErr(err)
	}
	b, err := bundle.Fetch(ctx, o.Artifact, mc.SrcOptions()...)
	if err != nil {
		var nf *bundle.NotFoundError
		var inv *bundle.InvalidError
		if errors.As(err, &nf) || errors.As(err, &inv) {
			return "", inputErr(err)
		}
		// What to do about it, with the command's flags, as run says it.
		return "", mc.Registry().Describe("reading bundle "+o.Artifact, ref.Context().RegistryStr(), err)
	}
	arch := o.Platforms
	if len(arch) == 0 {
		if arch, err = imagePlatforms(ctx, mc, o.Artifact); err != nil {
			return "", err
		}
	}
	data, notes, err := Manifest(b, o.Artifact, arch)
	if err != nil {
		return "", err
	}
	if o.Note != nil {
		for _, n := range notes {
			o.Note(n)
		}
	}
	if _, err := manifest.Parse(out, data); err != nil {
		return "", fmt.Errorf("the scaffolded manifest does not parse (a bug): %w", err)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return "", err
	}
	return out, os.WriteFile(out, data, 0o644)
}

// imagePlatforms lists the platforms (os/arch[/variant]) of an image index
// (attestations left out), or the one platform of an image (from its
// config); linux/amd64 when none is named.
func imagePlatforms(ctx context.Context, mc *mirror.Client, ref string) ([]string, error) {
	if _, err := mc.ParseReference(ref); err != nil {
		return nil, inputErr(err)
	}
	p, err := mc.Registry().ImagePlatforms(ctx, ref)
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		p = []string{"linux/amd64"}
	}
	return p, nil
}

// Manifest renders the PackageManifest (YAML, 2-space indent) of bundle b
// read from ref, with spec.arch arch. What the CSV gives and the manifest
// rules (lint.ManifestFile) refuse is left out: an icon that is too large
// or not an image, a description or displayName over its size limit (the
// displayName becomes the package name), a link without name or absolute
// URL. notes says, one line a value left out, what and why (the finding, its
// rule and hint). Errors: *InputError when the CSV names no package or no
// spec.version.
func Manifest(b *bundle.Bundle, ref string, arch []string) (data []byte, notes []string, err error) {
	pkg := b.Package
	if pkg == "" {
		pkg, _, _ = strings.Cut(b.CSVName, ".")
	}
	version := strings.TrimPrefix(b.Version, "v")
	if pkg == "" || version == "" {
		return nil, nil, inputErr(fmt.Errorf("bundle %s: the CSV has no package name or spec.version: write the manifest by hand", ref))
	}
	m := manifest.PackageManifest{
		APIVersion: manifest.APIVersion, Kind: manifest.Kind,
		Metadata: manifest.Metadata{Name: pkg + ".v" + version},
		Spec: manifest.Spec{
			Type: "bundle", Artifact: ref, Version: "v" + version, Arch: arch,
			Info:          manifest.Info{DisplayName: b.DisplayName, Description: b.Description},
			RelatedImages: b.Images,
		},
	}
	if m.Spec.Info.DisplayName == "" {
		m.Spec.Info.DisplayName = pkg
	}
	if csv := b.CSV; csv != nil {
		if len(csv.Spec.Icon) > 0 {
			m.Spec.Info.Icon = csv.Spec.Icon[0].Data
		}
		m.Spec.Info.Keywords = csv.Spec.Keywords
		for _, l := range csv.Spec.Links {
			if l.URL != "" {
				m.Spec.Info.Links = append(m.Spec.Info.Links, manifest.Link{Name: l.Name, URL: l.URL})
			}
		}
	}
	if data, err = encode(&m); err != nil {
		return nil, nil, err
	}
	if notes = leaveOutRefused(&m, pkg, lint.ManifestFile("manifest.yaml", data)); len(notes) > 0 {
		if data, err = encode(&m); err != nil {
			return nil, nil, err
		}
	}
	return data, notes, nil
}

func encode(m *manifest.PackageManifest) ([]byte, error) {
	var buf strings.Builder
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return []byte(buf.String()), nil
}

// linkIndex finds the index of spec.info.links[i] at the start of a
// manifest/link finding's message.
var linkIndex = regexp.MustCompile(`^spec\.info\.links\[(\d+)\]`)

// leaveOutRefused removes from m the spec.info values that the error
// findings fs (the manifest rules on m as encoded) refuse, and returns a note
// for each. Findings on other fields are left for Create to report.
func leaveOutRefused(m *manifest.PackageManifest, pkg string, fs []lint.Finding) []string {
	var notes []string
	drop := map[int]bool{}
	for _, f := range fs {
		if f.Severity != lint.Error {
			continue
		}
		what := ""
		switch {
		case f.Rule == lint.RuleManifestIcon:
			m.Spec.Info.Icon, what = "", "spec.info.icon left out"
		case f.Rule == lint.RuleManifestFieldSize && strings.HasPrefix(f.Message, "spec.info.description"):
			m.Spec.Info.Description, what = "", "spec.info.description left out"
		case f.Rule == lint.RuleManifestFieldSize && strings.HasPrefix(f.Message, "spec.info.displayName"):
			m.Spec.Info.DisplayName, what = pkg, "spec.info.displayName is the package name "+pkg
		case f.Rule == lint.RuleManifestLink:
			sub := linkIndex.FindStringSubmatch(f.Message)
			if sub == nil {
				continue
			}
			i, _ := strconv.Atoi(sub[1])
			if drop[i] {
				continue // one note a link
			}
			drop[i], what = true, "spec.info.links["+sub[1]+"] left out"
		default:
			continue
		}
		notes = append(notes, fmt.Sprintf("%s: the CSV's value would fail publish lint: %s [%s]; %s", what, f.Message, f.Rule, f.Hint))
	}
	if len(drop) > 0 {
		var keep []manifest.Link
		for i, l := range m.Spec.Info.Links {
			if !drop[i] {
				keep = append(keep, l)
			}
		}
		m.Spec.Info.Links = keep
	}
	return notes
}
