package model

import (
	"sort"
	"strings"
)

// ChangeKind is what a publish does to an artifact or a version in the
// rendered catalog.
type ChangeKind string

// The kinds of change, in the order every report lists them.
const (
	// ChangeListed: a new artifact, with its present versions.
	ChangeListed ChangeKind = "listed"
	// ChangeUpgraded: a new version of an artifact already listed.
	ChangeUpgraded ChangeKind = "upgraded"
	// ChangeRelisted: an artifact (with its present versions) or a
	// version that was delisted and is present again.
	ChangeRelisted ChangeKind = "relisted"
	// ChangeDelisted: an artifact (Whole) or a version now present: false.
	ChangeDelisted ChangeKind = "delisted"
	// ChangeUpdated: a published version, or an artifact by its name
	// alone, whose rendered catalog content changed in place.
	ChangeUpdated ChangeKind = "updated"
)

// ChangeKinds lists every kind in report order.
var ChangeKinds = []ChangeKind{ChangeListed, ChangeUpgraded, ChangeRelisted, ChangeDelisted, ChangeUpdated}

// Change is one change a publish makes to the rendered catalog: its kind,
// the artifact, and the versions it concerns (semver without "v"; none for
// an artifact named alone). Whole marks a change of the artifact as a
// whole (a delisted artifact).
type Change struct {
	Kind     ChangeKind
	Artifact string
	Versions []string
	Whole    bool
}

// Item is the change as reports print it: "<artifact> <version>[, ...]",
// "<artifact> (artifact)" for a whole artifact delisted, or the artifact
// alone.
func (c Change) Item() string {
	switch {
	case c.Whole:
		return c.Artifact + " (artifact)"
	case len(c.Versions) > 0:
		return c.Artifact + " " + strings.Join(c.Versions, ", ")
	}
	return c.Artifact
}

// ParseChange is the inverse of Item for a change of kind k.
func ParseChange(k ChangeKind, item string) Change {
	art, rest, _ := strings.Cut(item, " ")
	c := Change{Kind: k, Artifact: art}
	switch {
	case rest == "(artifact)":
		c.Whole = true
	case rest != "":
		c.Versions = strings.Split(rest, ", ")
	}
	return c
}

// CountChanges counts cs by kind: one per Change (a listed or relisted
// artifact counts once, whatever its versions).
func CountChanges(cs []Change) map[ChangeKind]int {
	n := map[ChangeKind]int{}
	for _, c := range cs {
		n[c.Kind]++
	}
	return n
}

// ChangedArtifacts lists the artifacts cs names, sorted, each once.
func ChangedArtifacts(cs []Change) []string {
	set := map[string]bool{}
	var out []string
	for _, c := range cs {
		if !set[c.Artifact] {
			set[c.Artifact] = true
			out = append(out, c.Artifact)
		}
	}
	sort.Strings(out)
	return out
}

// UpdatedInPlace lists the changes in place between two merged record
// lists (prev, next) of artifacts present in both: each version present
// in both whose record differs in what is rendered (bundle digest, mirrored
// images, object name; not the manifest path), and each artifact whose own
// fields differ (registry, repository, display name, description), by its
// name alone. Artifacts and versions are in next's order.
func UpdatedInPlace(prev, next []ArtifactRecord) []Change {
	pa := map[string]ArtifactRecord{}
	for _, a := range prev {
		pa[a.Name] = a
	}
	var out []Change
	for _, a := range next {
		p, ok := pa[a.Name]
		if !ok || !p.Present || !a.Present {
			continue
		}
		pv := map[string]VersionRecord{}
		for _, v := range p.Versions {
			pv[v.Tag] = v
		}
		var changed []string
		for _, v := range a.Versions {
			if o, ok := pv[v.Tag]; ok && o.Present && v.Present && !sameRendered(o, v) {
				changed = append(changed, v.Version)
			}
		}
		for _, v := range changed {
			out = append(out, Change{Kind: ChangeUpdated, Artifact: a.Name, Versions: []string{v}})
		}
		if len(changed) == 0 && (p.Registry != a.Registry || p.Repository != a.Repository || p.DisplayName != a.DisplayName || p.Description != a.Description) {
			out = append(out, Change{Kind: ChangeUpdated, Artifact: a.Name})
		}
	}
	return out
}

func sameRendered(a, b VersionRecord) bool {
	if a.BundleDigest != b.BundleDigest || a.ObjectName != b.ObjectName || len(a.Images) != len(b.Images) {
		return false
	}
	for i := range a.Images {
		x, y := a.Images[i], b.Images[i]
		if x.Source != y.Source || x.Destination != y.Destination || x.Digest != y.Digest {
			return false // the signatures are not rendered
		}
	}
	return true
}
