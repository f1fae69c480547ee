// Package render turns the published state of a package repo into the Alauda
// Artifact and ArtifactVersion objects (CRDs in internal/crdcheck/crds,
// docs/design.md#objects)
// and builds them through a cluster's kustomize overlay into rendered/.
//
// Rendering is a pure function of its inputs: the same artifacts and the same
// overlays give byte-identical files.
package render

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
)

// Group, version and labels of the Alauda objects.
const (
	APIVersion           = "app.alauda.io/v1alpha1"
	LabelArtifactVersion = "cpaas.io/artifact-version"
	LabelLibrary         = "cpaas.io/library"
)

// Config is what the objects need besides the artifacts.
type Config struct {
	Namespace        string   // default cpaas-system
	Library          string   // default platform
	ImagePullSecrets []string // Artifact.spec.imagePullSecrets
}

func (c Config) withDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = "cpaas-system"
	}
	if c.Library == "" {
		c.Library = "platform"
	}
	return c
}

// Artifact is one operator (OLM package) as published. It is also the unit
// of publish/state.yaml, so it carries what a tombstone needs to be rendered
// after its manifests are gone.
type Artifact struct {
	Name        string    `json:"name"`
	Present     bool      `json:"present"`
	Registry    string    `json:"registry"`   // destination host[:port]
	Repository  string    `json:"repository"` // bundle repository at the destination
	DisplayName string    `json:"displayName,omitempty"`
	Description string    `json:"description,omitempty"`
	Versions    []Version `json:"versions"`
}

// Version is one bundle of an artifact.
type Version struct {
	Version      string  `json:"version"` // semver without "v"
	Tag          string  `json:"tag"`     // bundle tag at the destination
	Present      bool    `json:"present"`
	BundleDigest string  `json:"bundleDigest,omitempty"`
	Images       []Image `json:"images,omitempty"` // related images mirrored
	// Path is the manifest file the version was last published from,
	// relative to the package repo (slash-separated); `publish plan` reads
	// the other versions of a changed artifact from there. Not rendered.
	Path string `json:"path,omitempty"`
}

// Image records one mirrored image: the lock of what a version names.
type Image struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Digest      string `json:"digest"`
}

// ArtifactVersionName is the ArtifactVersion object name: <artifact>.<tag>,
// with characters a Kubernetes name cannot hold turned into '-'.
func ArtifactVersionName(artifact, tag string) string {
	t := strings.ToLower(tag)
	t = invalidNameChars.ReplaceAllString(t, "-")
	return artifact + "." + strings.Trim(t, "-.")
}

var invalidNameChars = regexp.MustCompile(`[^a-z0-9.-]`)

// Sort orders artifacts by name and their versions by semver (then tag).
func Sort(arts []Artifact) {
	sort.Slice(arts, func(i, j int) bool { return arts[i].Name < arts[j].Name })
	for _, a := range arts {
		sort.SliceStable(a.Versions, func(i, j int) bool {
			vi, ei := semver.Parse(a.Versions[i].Version)
			vj, ej := semver.Parse(a.Versions[j].Version)
			if ei == nil && ej == nil && !vi.EQ(vj) {
				return vi.LT(vj)
			}
			return a.Versions[i].Tag < a.Versions[j].Tag
		})
	}
}

// Merge adds tombstones to current (the artifacts built from the source
// tree): every artifact or version of previous (publish/state.yaml) that is
// not in current is kept with Present false. A version or artifact in
// current is present, whatever previous said (re-adding relists). The result
// is sorted.
func Merge(previous, current []Artifact) []Artifact {
	byName := map[string]*Artifact{}
	var out []Artifact
	for _, a := range current {
		a.Present = true
		a.Versions = append([]Version(nil), a.Versions...)
		for i := range a.Versions {
			a.Versions[i].Present = true
		}
		out = append(out, a)
	}
	for i := range out {
		byName[out[i].Name] = &out[i]
	}
	var gone []Artifact
	for _, p := range previous {
		cur, ok := byName[p.Name]
		if !ok {
			t := p
			t.Present = false
			t.Versions = append([]Version(nil), p.Versions...)
			for i := range t.Versions {
				t.Versions[i].Present = false
			}
			gone = append(gone, t)
			continue
		}
		have := map[string]bool{}
		for _, v := range cur.Versions {
			have[v.Tag] = true
		}
		for _, v := range p.Versions {
			if !have[v.Tag] {
				v.Present = false
				cur.Versions = append(cur.Versions, v)
			}
		}
	}
	out = append(out, gone...)
	Sort(out)
	return out
}

// Changes is what a publish changes, for commit messages and reports.
type Changes struct {
	Listed   []string // new artifacts (artifact@version...)
	Upgraded []string // new versions of listed artifacts
	Delisted []string // artifacts or versions now present: false
	Relisted []string // artifacts or versions present again
	Updated  []string // published versions whose manifest was edited in place
}

// Empty reports whether nothing was listed, upgraded, delisted or relisted.
func (c Changes) Empty() bool {
	return len(c.Listed)+len(c.Upgraded)+len(c.Delisted)+len(c.Relisted)+len(c.Updated) == 0
}

// Diff compares two merged artifact lists (previous state, next state).
func Diff(previous, next []Artifact) Changes {
	var ch Changes
	prev := map[string]Artifact{}
	for _, a := range previous {
		prev[a.Name] = a
	}
	for _, a := range next {
		p, had := prev[a.Name]
		pv := map[string]Version{}
		for _, v := range p.Versions {
			pv[v.Tag] = v
		}
		switch {
		case !had && a.Present:
			ch.Listed = append(ch.Listed, a.Name+" "+versionList(a.Versions, true))
			continue
		case had && p.Present && !a.Present:
			ch.Delisted = append(ch.Delisted, a.Name+" (artifact)")
			continue
		case had && !p.Present && a.Present:
			ch.Relisted = append(ch.Relisted, a.Name+" "+versionList(a.Versions, true))
			continue
		case !a.Present:
			continue
		}
		for _, v := range a.Versions {
			old, ok := pv[v.Tag]
			switch {
			case !ok && v.Present:
				ch.Upgraded = append(ch.Upgraded, a.Name+" "+v.Version)
			case ok && old.Present && !v.Present:
				ch.Delisted = append(ch.Delisted, a.Name+" "+v.Version)
			case ok && !old.Present && v.Present:
				ch.Relisted = append(ch.Relisted, a.Name+" "+v.Version)
			}
		}
	}
	return ch
}

func versionList(vs []Version, present bool) string {
	var s []string
	for _, v := range vs {
		if v.Present == present {
			s = append(s, v.Version)
		}
	}
	return strings.Join(s, ", ")
}

// Object is a Kubernetes object as a JSON-compatible map.
type Object = map[string]any

// Objects returns the Artifact and ArtifactVersion objects of arts, Artifact
// first, then its versions in order. Shapes follow the CRDs: Artifact spec
// {type, present, registry, repository, displayName, description,
// imagePullSecrets, artifactVersionSelector}, ArtifactVersion spec {tag,
// present}.
func Objects(cfg Config, arts []Artifact) []Object {
	cfg = cfg.withDefaults()
	var out []Object
	for _, a := range arts {
		spec := Object{
			"type":       "bundle",
			"present":    a.Present,
			"registry":   a.Registry,
			"repository": a.Repository,
			"artifactVersionSelector": Object{
				"matchLabels": Object{LabelArtifactVersion: a.Name},
			},
		}
		if a.DisplayName != "" {
			spec["displayName"] = a.DisplayName
		}
		if a.Description != "" {
			spec["description"] = a.Description
		}
		if len(cfg.ImagePullSecrets) > 0 {
			ips := make([]any, len(cfg.ImagePullSecrets))
			for i, s := range cfg.ImagePullSecrets {
				ips[i] = s
			}
			spec["imagePullSecrets"] = ips
		}
		out = append(out, Object{
			"apiVersion": APIVersion,
			"kind":       "Artifact",
			"metadata": Object{
				"name":      a.Name,
				"namespace": cfg.Namespace,
				"labels":    Object{LabelLibrary: cfg.Library},
			},
			"spec": spec,
		})
		for _, v := range a.Versions {
			out = append(out, Object{
				"apiVersion": APIVersion,
				"kind":       "ArtifactVersion",
				"metadata": Object{
					"name":      ArtifactVersionName(a.Name, v.Tag),
					"namespace": cfg.Namespace,
					"labels": Object{
						LabelArtifactVersion: a.Name,
						LabelLibrary:         cfg.Library,
					},
				},
				"spec": Object{"tag": v.Tag, "present": v.Present && a.Present},
			})
		}
	}
	return out
}

// fileName is the stable file name of an object: <kind>_<name>.yaml in
// lowercase.
func fileName(kind, name string) string {
	return fmt.Sprintf("%s_%s.yaml", strings.ToLower(kind), name)
}
