package pipeline

import (
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/source/diff"
)

func presentArtifacts(arts []model.ArtifactRecord) (n int) {
	for _, a := range arts {
		if a.Present {
			n++
		}
	}
	return n
}

// markUnpublished marks Changed the versions whose bundles must be read
// and mirrored: those changed is true for (nil: all), and those
// publish/state.yaml has no mirrored record of (never published, or
// published before digests were recorded).
func markUnpublished(vs []*model.Version, state []model.ArtifactRecord, changed func(a, v string) bool) {
	known := map[[3]string]bool{}
	for _, a := range state {
		for _, v := range a.Versions {
			if v.Present && a.Present && v.BundleDigest != "" {
				known[[3]string{a.Name, v.Version, v.Tag}] = true
			}
		}
	}
	for _, v := range vs {
		k := v.Key()
		v.Changed = changed == nil || changed(k.Artifact, k.Version) || !known[[3]string{k.Artifact, k.Version, v.Manifest.Tag()}]
	}
}

// currentRecords returns the records of vs as this publish makes them:
// Artifacts through m (with rep's digests, nil when nothing was mirrored),
// completed from the previous state (carryOver, taking the registry and
// repository of known artifacts from it when m maps nothing). run, plan,
// push --catalog and render make their records through it. Errors are
// input errors (a bundle repository that cannot be mapped).
func currentRecords(m Mapper, vs []*model.Version, rep *mirror.Report, previous []model.ArtifactRecord) ([]model.ArtifactRecord, error) {
	current, err := Artifacts(m, vs, rep)
	if err != nil {
		return nil, inputErr(err)
	}
	_, none := m.(unmapped)
	carryOver(current, previous, none)
	return current, nil
}

// carryOver fills what current lacks from the previous state: display name
// and description of an artifact, bundle digest and mirrored images of a
// version (same tag) that was not read in this run, and the recorded
// ArtifactVersion object name of a version (same tag). With mapping, the
// registry and repository of known artifacts come from the state too (used
// when no destination registry is given).
func carryOver(current, previous []model.ArtifactRecord, mapping bool) {
	prev := map[string]model.ArtifactRecord{}
	for _, a := range previous {
		prev[a.Name] = a
	}
	for i := range current {
		p, ok := prev[current[i].Name]
		if !ok {
			continue
		}
		if mapping {
			current[i].Registry, current[i].Repository = p.Registry, p.Repository
		}
		if current[i].DisplayName == "" {
			current[i].DisplayName = p.DisplayName
		}
		if current[i].Description == "" {
			current[i].Description = p.Description
		}
		old := map[string]model.VersionRecord{}
		for _, v := range p.Versions {
			old[v.Tag] = v
		}
		for j, v := range current[i].Versions {
			ov, ok := old[v.Tag]
			if ok && v.BundleDigest == "" {
				current[i].Versions[j].BundleDigest, current[i].Versions[j].Images = ov.BundleDigest, ov.Images
			}
			if ok && v.ObjectName == "" {
				current[i].Versions[j].ObjectName = ov.ObjectName // imported: the cluster's name is kept
			}
		}
	}
}

// Mapper maps the source reference of a bundle image (spec.artifact) to the
// registry (host[:port]) and repository it is mirrored to: an Artifact's
// spec.registry and spec.repository. An error names what is wrong with the
// reference.
type Mapper interface {
	MapRepository(src string) (registry, repository string, err error)
}

// clientMapper is the mapping of a registry client (--dst-registry).
type clientMapper struct{ mc *mirror.Client }

func (c clientMapper) MapRepository(src string) (string, string, error) {
	ref, err := c.mc.ParseReference(src)
	if err != nil {
		return "", "", err
	}
	return c.mc.DstHost(), c.mc.DestinationRepository(ref), nil
}

// unmapped maps every reference to UnmappedRegistry and its own repository
// path: the mapping when there is no destination registry.
type unmapped struct{}

func (unmapped) MapRepository(src string) (string, string, error) {
	if err := registry.CheckReference(src); err != nil {
		return "", "", fmt.Errorf("image reference %q: %w", src, err)
	}
	ref, err := name.ParseReference(src)
	if err != nil {
		return "", "", err
	}
	return UnmappedRegistry, ref.Context().RepositoryStr(), nil
}

// DestinationOf returns the mapping of a registry client (--dst-registry),
// or unmapped when the client is nil or has no destination registry.
func DestinationOf(mc *mirror.Client) Mapper {
	if mc == nil || mc.DstHost() == "" {
		return unmapped{}
	}
	return clientMapper{mc}
}

// Artifacts builds the published artifacts from the versions (sorted by
// manifest.Sort; bundles nil when not read) and the mirror report (nil when
// nothing was mirrored), mapping each artifact's bundle repository with m.
// Display name and description come from the newest version's manifest
// info, else from its CSV.
func Artifacts(m Mapper, vs []*model.Version, rep *mirror.Report) ([]model.ArtifactRecord, error) {
	digests := map[string]mirror.Result{}
	if rep != nil {
		for _, r := range rep.Images {
			digests[r.Source] = r
		}
	}
	var out []model.ArtifactRecord
	for _, art := range model.Group(vs) {
		a := model.ArtifactRecord{Name: art.Name}
		for i, v := range art.Versions {
			if v.Kind() == manifest.TypeChart {
				a.Type = manifest.TypeChart
			}
			pm := v.Manifest
			registry, repository, err := m.MapRepository(v.Ref())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", v.Where(), err)
			}
			if i == 0 {
				a.Registry, a.Repository = registry, repository
			}
			// Versions are sorted by semver: the last one wins.
			a.DisplayName = pm.Spec.Info.DisplayName
			a.Description = pm.Spec.Info.Description
			if c := v.Content; c != nil {
				name, desc := c.Info()
				if a.DisplayName == "" {
					a.DisplayName = name
				}
				if a.Description == "" {
					a.Description = desc
				}
			}
			rv := model.VersionRecord{Version: pm.Version.String(), Tag: pm.Tag(), Present: true, Path: pm.Path}
			if r, ok := digests[v.Ref()]; ok {
				rv.BundleDigest, rv.BundleSignatures = r.Digest, r.SignatureDigests
			}
			for _, img := range v.Images {
				if r, ok := digests[img]; ok {
					rv.Images = append(rv.Images, model.Image{Source: r.Source, Destination: r.Destination, Digest: r.Digest, Signatures: r.SignatureDigests})
				}
			}
			sort.Slice(rv.Images, func(i, j int) bool { return rv.Images[i].Source < rv.Images[j].Source })
			a.Versions = append(a.Versions, rv)
		}
		out = append(out, a)
	}
	model.SortRecords(out)
	return out, nil
}

// updatedVersions lists "<artifact> <version>" for every version change
// detection saw modified, or whose manifest is edited on disk (dirty),
// that was published before and still is.
func updatedVersions(dr *diff.Result, dirty [][2]string, prev, next []model.ArtifactRecord) []string {
	present := func(arts []model.ArtifactRecord) map[[2]string]bool {
		m := map[[2]string]bool{}
		for _, a := range arts {
			for _, v := range a.Versions {
				if a.Present && v.Present {
					m[[2]string{a.Name, v.Version}] = true
				}
			}
		}
		return m
	}
	before, after := present(prev), present(next)
	var keys [][2]string
	if dr != nil && !dr.All {
		for _, c := range dr.Changes {
			if c.Kind == diff.Modified {
				keys = append(keys, [2]string{c.Artifact, strings.TrimPrefix(c.Version, "v")})
			}
		}
	}
	keys = append(keys, dirty...)
	var out []string
	seen := map[[2]string]bool{}
	for _, k := range keys {
		if before[k] && after[k] && !seen[k] {
			seen[k] = true
			out = append(out, k[0]+" "+k[1])
		}
	}
	return out
}

// markChanged marks Changed the versions to read, lint and mirror:
// changed since the base, unknown to the state, or whose manifests differ
// from the package repo's HEAD (dirty: uncommitted, staged or not, the one
// detector of source.Repo.Dirty that the incremental way reads too).
//
// The versions the last publish took from a dirty tree (prevDirty,
// gitops.Source.Dirty) are read again too, so that what the catalog holds
// of them comes from a commit once the tree is clean.
func (r *run) markChanged(vs []*model.Version, dirty map[string]bool, prevDirty []string, state []model.ArtifactRecord) {
	markUnpublished(vs, state, r.changed)
	again := pathSet(prevDirty)
	n := 0
	for _, v := range vs {
		if again[v.Manifest.Path] {
			v.Changed = true
		}
		if dirty[v.Manifest.Path] {
			n++
			v.Changed = true
			r.dirty = append(r.dirty, [2]string{v.Manifest.Artifact, v.Manifest.Version.String()})
			r.dirtyPaths = append(r.dirtyPaths, v.Manifest.Path)
		}
	}
	sort.Strings(r.dirtyPaths)
	if n > 0 {
		r.warnf("%d manifest files differ from the package repo's HEAD (uncommitted changes): they are published as they are on disk, but the catalog commit names HEAD", n)
	}
}
