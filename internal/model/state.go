package model

import (
	"sort"
	"strings"

	"github.com/blang/semver/v4"
)

// ArtifactRecord is what publish/state.yaml records of one artifact (OLM
// package) as published: present or delisted (a tombstone), where its
// bundles are at the destination, and every version ever published. It
// carries what a tombstone needs to be rendered after its manifests are
// gone. The state file's format is documented in docs/design.md.
type ArtifactRecord struct {
	Name    string `json:"name"`
	Present bool   `json:"present"`
	// Type is the kind of package (the manifests' spec.type): "" for a
	// bundle (and in states written before charts), manifest.TypeChart ("chart") for a Helm
	// chart, which the alauda target renders as a ChartRepo, not an
	// Artifact.
	Type        string          `json:"type,omitempty"`
	Registry    string          `json:"registry"`   // destination host[:port]
	Repository  string          `json:"repository"` // bundle repository at the destination
	DisplayName string          `json:"displayName,omitempty"`
	Description string          `json:"description,omitempty"`
	Versions    []VersionRecord `json:"versions"`
}

// VersionRecord is what publish/state.yaml records of one version (bundle)
// of an artifact.
type VersionRecord struct {
	Version      string `json:"version"` // semver without "v"
	Tag          string `json:"tag"`     // bundle tag at the destination
	Present      bool   `json:"present"`
	BundleDigest string `json:"bundleDigest,omitempty"`
	// BundleSignatures are the digests of the bundle's signature,
	// attestation and referrer manifests at the destination (in its
	// repository), as the mirror found them; none when the source has none
	// or they were not copied (--signatures=false), and in states written
	// before they were recorded.
	BundleSignatures []string `json:"bundleSignatures,omitempty"`
	Images           []Image  `json:"images,omitempty"` // related images mirrored
	// Path is the manifest file the version was last published from,
	// relative to the package repo (slash-separated); `publish plan` reads
	// the other versions of a changed artifact from there. Not rendered.
	Path string `json:"path,omitempty"`
	// ObjectName is the name of the version's ArtifactVersion object when
	// it is not the one publish derives (<artifact>.<tag>,
	// render.ArtifactVersionName): recorded by `publish import` for an
	// ArtifactVersion that violet or `kubectl artifact` created, so that
	// every later render keeps the name the cluster has. Empty: the
	// derived name. State files without it read as before.
	ObjectName string `json:"objectName,omitempty"`
}

// Image records one mirrored image: the lock of what a version names.
type Image struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Digest      string `json:"digest"`
	// Signatures are the digests of the image's signature, attestation
	// and referrer manifests at the destination, in its repository (as
	// VersionRecord.BundleSignatures).
	Signatures []string `json:"signatures,omitempty"`
}

// RepositoryTag splits the image's Destination (host/path:tag or
// host/path@digest, as the mirror records it) into its repository and its
// tag ("" when it is named by digest alone).
func (i Image) RepositoryTag() (repo, tag string) {
	s := i.Destination
	if k := strings.Index(s, "@"); k >= 0 {
		s = s[:k]
	}
	if k := strings.LastIndex(s, ":"); k > strings.LastIndex(s, "/") {
		return s[:k], s[k+1:]
	}
	return s, ""
}

// SortRecords orders artifacts by name and their versions by semver (then
// tag), in place: the order of publish/state.yaml.
func SortRecords(arts []ArtifactRecord) {
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
