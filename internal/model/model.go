// Package model holds the plain values the stages of publish pass to each
// other (docs/design.md, "The objects"):
//
//   - Version: one version of the package repo being published (its
//     PackageManifest, the Content its kind of package read from its
//     artifact or the error reading it, whether it changed, its images),
//     and Artifact, the versions of one artifact;
//   - ArtifactRecord, VersionRecord and Image: what publish/state.yaml
//     records of what was published (the catalog state is made of them);
//   - Change: one change a publish makes to the rendered catalog (listed,
//     upgraded, relisted, delisted, updated in place), from which every
//     report of a run is written;
//   - InputError: a failure the user fixes in the package repo, the
//     catalog's overlays or the flags (exit code 1).
//
// It imports the manifest format (internal/manifest) and no stage, so every
// stage can import it. What a kind of package reads (a bundle's CSV) lives
// with the kind (internal/kind), behind Content.
package model

import (
	"fmt"

	"github.com/operator-publish/publish/internal/errclass"
	"github.com/operator-publish/publish/internal/manifest"
)

// Version is one version being published: a PackageManifest of the package
// repo and what the stages learn about it. Stages fill the fields they own
// (the read stage, through the version's kind of package, Content, ReadErr
// and Images) and leave the others.
type Version struct {
	// Manifest is the parsed PackageManifest file (never nil).
	Manifest *manifest.PackageManifest
	// Changed marks a version whose artifact is read, linted and mirrored
	// in this run: changed since the last publish, unknown to
	// publish/state.yaml, or edited on disk. The other versions keep what
	// the state recorded.
	Changed bool
	// Content is what the version's kind of package read from its artifact
	// (spec.artifact; a bundle image's metadata, CSV and CRDs for a
	// bundle), nil when it was not read (SetContent).
	Content Content
	// ReadErr is why the artifact could not be used, for a bundle
	// *bundle.NotFoundError or *bundle.InvalidError (a lint finding, exit
	// code 1). Registry failures are not recorded here: they stop the
	// stage.
	ReadErr error
	// Images are the related images of the version, each once, in order:
	// spec.relatedImages, then the images the artifact deploys
	// (Content.Images, once read). The artifact itself is not among them.
	Images []string
}

// Content is what a kind of package read from the artifact of a version:
// the bundle image for spec.type bundle (internal/kind). Generic stages
// (the mirror list, the records, the signature check) use these methods
// only; a stage that needs one kind's content (the olm target's
// file-based catalog, the bundle lint rules) asks that kind for it.
type Content interface {
	// Images returns the images the artifact deploys besides
	// spec.relatedImages (a bundle: those its CSV deploys), in order;
	// the artifact itself is not among them.
	Images() []string
	// ImagesFrom names what deploys Images, for messages ("the bundle's
	// CSV").
	ImagesFrom() string
	// Info returns the display name and description the artifact gives
	// itself (a bundle: its CSV's), for when the manifest's spec.info has
	// none; "" when it gives none.
	Info() (displayName, description string)
}

// Key identifies a version: artifact name and version (semver without "v").
type Key struct{ Artifact, Version string }

// NewVersions returns one Version per manifest, in the same order, with
// Images set to the manifest's spec.relatedImages.
func NewVersions(ms []*manifest.PackageManifest) []*Version {
	out := make([]*Version, len(ms))
	for i, m := range ms {
		out[i] = &Version{Manifest: m, Images: uniqueInOrder(m.Spec.RelatedImages)}
	}
	return out
}

// Key returns the version's artifact and version.
func (v *Version) Key() Key {
	return Key{Artifact: v.Manifest.Artifact, Version: v.Manifest.Version.String()}
}

// Kind is the version's kind of package: the manifest's spec.type
// ("bundle"), bundle for a manifest made in code without one (a parsed
// manifest always has one).
func (v *Version) Kind() string {
	if v.Manifest.Spec.Type == "" {
		return manifest.TypeBundle
	}
	return v.Manifest.Spec.Type
}

// Ref is the artifact's reference: the bundle image of a bundle
// (spec.artifact); for a chart, the chart as an OCI reference
// (manifest.ChartSource.Reference: spec.artifact without oci://, or the
// chart repository's host and path with the chart's name and version).
func (v *Version) Ref() string {
	m := v.Manifest
	if m.Spec.Type == manifest.TypeChart {
		if src, err := manifest.ParseChartSource(m.Spec.Artifact, m.Spec.Chart); err == nil {
			return src.Reference(m.Version.String())
		}
	}
	return m.Spec.Artifact
}

// Where names the manifest line of spec.artifact, "path:line", for
// messages about the artifact.
func (v *Version) Where() string {
	return fmt.Sprintf("%s:%d", v.Manifest.Path, v.Manifest.Lines["spec.artifact"])
}

// SetContent records the content read for the version, clears ReadErr and
// recomputes Images: spec.relatedImages, then c.Images (c may be nil: not
// read).
func (v *Version) SetContent(c Content) {
	v.Content, v.ReadErr = c, nil
	imgs := append([]string(nil), v.Manifest.Spec.RelatedImages...)
	if c != nil {
		imgs = append(imgs, c.Images()...)
	}
	v.Images = uniqueInOrder(imgs)
}

// SetReadErr records why the version's artifact could not be used (see
// ReadErr): Content is cleared and Images are spec.relatedImages again.
func (v *Version) SetReadErr(err error) {
	v.SetContent(nil)
	v.ReadErr = err
}

// Read reports whether the version's artifact was read: its Content or its
// ReadErr is set.
func (v *Version) Read() bool { return v.Content != nil || v.ReadErr != nil }

func uniqueInOrder(in []string) []string {
	seen := make(map[string]bool, len(in))
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Artifact is the versions of one artifact being published, in the order
// they were given (manifest.Sort: by semver).
type Artifact struct {
	Name     string
	Versions []*Version
}

// Group groups versions by artifact, artifacts in the order of their first
// version.
func Group(vs []*Version) []*Artifact {
	by := map[string]*Artifact{}
	var out []*Artifact
	for _, v := range vs {
		a := by[v.Manifest.Artifact]
		if a == nil {
			a = &Artifact{Name: v.Manifest.Artifact}
			by[a.Name] = a
			out = append(out, a)
		}
		a.Versions = append(a.Versions, v)
	}
	return out
}

// ChangedVersions returns the versions marked Changed, in order.
func ChangedVersions(vs []*Version) []*Version {
	var out []*Version
	for _, v := range vs {
		if v.Changed {
			out = append(out, v)
		}
	}
	return out
}

// Manifests returns the manifests of vs, in order.
func Manifests(vs []*Version) []*manifest.PackageManifest {
	out := make([]*manifest.PackageManifest, len(vs))
	for i, v := range vs {
		out[i] = v.Manifest
	}
	return out
}

// InputError is a problem the user must fix in the package repo, the
// catalog's overlays or the flags (exit code 1). Everything else that fails
// is an infrastructure error (exit code 2).
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// ErrorClass implements errclass.Classified: an input error (exit 1).
func (e *InputError) ErrorClass() errclass.Class { return errclass.Input }

// Input wraps err in an *InputError (nil stays nil).
func Input(err error) error {
	if err == nil {
		return nil
	}
	return &InputError{Err: err}
}
