// Package model holds the plain values the stages of publish pass to each
// other (docs/design.md, "The objects"):
//
//   - Version: one version of the package repo being published (its
//     PackageManifest, its bundle or the error reading it, whether it
//     changed, its images), and Artifact, the versions of one artifact;
//   - ArtifactRecord, VersionRecord and Image: what publish/state.yaml
//     records of what was published (the catalog state is made of them);
//   - Change: one change a publish makes to the rendered catalog (listed,
//     upgraded, relisted, delisted, updated in place), from which every
//     report of a run is written;
//   - InputError: a failure the user fixes in the package repo, the
//     catalog's overlays or the flags (exit code 1).
//
// It imports the format packages (internal/manifest, internal/bundle) and no
// stage, so every stage can import it.
package model

import (
	"fmt"
	"github.com/operator-publish/publish/internal/errclass"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/manifest"
)

// Version is one version being published: a PackageManifest of the package
// repo and what the stages learn about it. Stages fill the fields they own
// (the bundle stage Bundle, BundleErr and Images) and leave the others.
type Version struct {
	// Manifest is the parsed PackageManifest file (never nil).
	Manifest *manifest.PackageManifest
	// Changed marks a version whose bundle is read, linted and mirrored in
	// this run: changed since the last publish, unknown to
	// publish/state.yaml, or edited on disk. The other versions keep what
	// the state recorded.
	Changed bool
	// Bundle is the bundle image's content, nil when it was not read.
	Bundle *bundle.Bundle
	// BundleErr is why the bundle could not be used: *bundle.NotFoundError
	// or *bundle.InvalidError (a lint finding, exit code 1). Registry
	// failures are not recorded here: they stop the stage.
	BundleErr error
	// Images are the related images of the version, each once, in order:
	// spec.relatedImages, then the images the bundle's CSV deploys (once
	// the bundle is read, SetBundle). The bundle itself is not among them.
	Images []string
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

// Ref is the bundle image reference (spec.artifact).
func (v *Version) Ref() string { return v.Manifest.Spec.Artifact }

// Where names the manifest line of spec.artifact, "path:line", for
// messages about the bundle.
func (v *Version) Where() string {
	return fmt.Sprintf("%s:%d", v.Manifest.Path, v.Manifest.Lines["spec.artifact"])
}

// SetBundle records the bundle read for the version and recomputes Images:
// spec.relatedImages, then the images the bundle's CSV deploys.
func (v *Version) SetBundle(b *bundle.Bundle) {
	v.Bundle, v.BundleErr = b, nil
	imgs := append([]string(nil), v.Manifest.Spec.RelatedImages...)
	if b != nil {
		imgs = append(imgs, b.Images...)
	}
	v.Images = uniqueInOrder(imgs)
}

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
