// Package render turns the published state of a package repo (model
// records) into the Alauda Artifact and ArtifactVersion objects, builds them
// through a cluster's kustomize overlay into rendered/, and checks them
// against the CRDs built into internal/crdcheck (docs/design.md#objects).
//
// Rendering is a pure function of its inputs: the same artifacts and the same
// overlays give byte-identical files.
package render

import (
	"fmt"
	"strings"

	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
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
	// ChartGitURL is the Git repository a chart's ChartRepo (type Git)
	// reads its sources from, as Captain clones it: the catalog repo's
	// URL unless publish.yaml says another (clusters.<cluster>.chartGitURL); ChartGitPath
	// is the catalog's directory in it ("" for the root, --catalog-path).
	ChartGitURL, ChartGitPath string
	// ChartRepo, when its URL is set, is the existing ChartRepo whose
	// ChartMuseum repository the cluster's charts are uploaded to
	// (publish.yaml clusters.<cluster>.chartRepo: the ChartMuseum way):
	// no ChartRepo is rendered for them and no chart sources written.
	ChartRepo ChartRepoRef
	// RewriteImages, "values" (publish.yaml clusters.<cluster>.rewriteImages),
	// makes the catalog carry each chart with its values' images
	// rewritten to the destination, as a new signed chart version.
	RewriteImages string
}

// ChartRepoRef names an existing ChartRepo and the repository it serves
// (its spec.url), e.g. public-charts.
type ChartRepoRef struct {
	Name string `yaml:"name"`
	URL  string `yaml:"url"`
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

// Artifact, Version and Image are the state records, now in internal/model.
//
// Deprecated: use model.ArtifactRecord, model.VersionRecord and model.Image.
type (
	Artifact = model.ArtifactRecord
	Version  = model.VersionRecord
	Image    = model.Image
)

// ArtifactVersionName is the ArtifactVersion object name: <artifact>.<tag>,
// with characters a Kubernetes name cannot hold turned into '-' (see
// model.ArtifactVersionName, which it is).
func ArtifactVersionName(artifact, tag string) string {
	return model.ArtifactVersionName(artifact, tag)
}

// VersionObjectName is the ArtifactVersion object name of version v of
// artifact: the name the state records (model.VersionRecord.ObjectName,
// kept from an imported object), else ArtifactVersionName.
func VersionObjectName(artifact string, v model.VersionRecord) string {
	if v.ObjectName != "" {
		return v.ObjectName
	}
	return ArtifactVersionName(artifact, v.Tag)
}

// Sort orders artifacts by name and their versions by semver (then tag).
//
// Deprecated: use model.SortRecords.
func Sort(arts []model.ArtifactRecord) { model.SortRecords(arts) }

// Merge adds tombstones to current (the artifacts built from the source
// tree): every artifact or version of previous (publish/state.yaml) that is
// not in current is kept with Present false. A version or artifact in
// current is present, whatever previous said (re-adding relists). The result
// is sorted.
func Merge(previous, current []model.ArtifactRecord) []model.ArtifactRecord {
	byName := map[string]*model.ArtifactRecord{}
	var out []model.ArtifactRecord
	for _, a := range current {
		a.Present = true
		a.Versions = append([]model.VersionRecord(nil), a.Versions...)
		for i := range a.Versions {
			a.Versions[i].Present = true
		}
		out = append(out, a)
	}
	for i := range out {
		byName[out[i].Name] = &out[i]
	}
	var gone []model.ArtifactRecord
	for _, p := range previous {
		cur, ok := byName[p.Name]
		if !ok {
			t := p
			t.Present = false
			t.Versions = append([]model.VersionRecord(nil), p.Versions...)
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
	model.SortRecords(out)
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
func Diff(previous, next []model.ArtifactRecord) Changes {
	var ch Changes
	prev := map[string]model.ArtifactRecord{}
	for _, a := range previous {
		prev[a.Name] = a
	}
	for _, a := range next {
		p, had := prev[a.Name]
		pv := map[string]model.VersionRecord{}
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

func versionList(vs []model.VersionRecord, present bool) string {
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
// present}. A chart (model.ArtifactRecord.Type chart) is no Artifact: it
// is the ChartRepo of ClusterObjects.
func Objects(cfg Config, arts []model.ArtifactRecord) []Object {
	return ClusterObjects("", cfg, arts)
}

// ClusterObjects is Objects for cluster, with the ChartRepo (type Git) of
// each chart a version of which is listed, in the order of arts: its
// source is the chart's directory of the cluster in the catalog repo
// (ChartDir). A cluster whose charts go to an existing ChartRepo
// (Config.ChartRepo) gets none.
func ClusterObjects(cluster string, cfg Config, arts []model.ArtifactRecord) []Object {
	cfg = cfg.withDefaults()
	var out []Object
	for _, a := range arts {
		if a.Type == manifest.TypeChart {
			if o := chartRepo(cfg, cluster, a); o != nil && cfg.ChartRepo.URL == "" {
				out = append(out, o)
			}
			continue
		}
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
					"name":      VersionObjectName(a.Name, v),
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

// List returns the changes typed, in report order (model.ChangeKinds),
// each kind's in the order recorded.
func (c Changes) List() []model.Change {
	var out []model.Change
	for _, k := range model.ChangeKinds {
		for _, it := range c.items(k) {
			out = append(out, model.ParseChange(k, it))
		}
	}
	return out
}

func (c Changes) items(k model.ChangeKind) []string {
	switch k {
	case model.ChangeListed:
		return c.Listed
	case model.ChangeUpgraded:
		return c.Upgraded
	case model.ChangeRelisted:
		return c.Relisted
	case model.ChangeDelisted:
		return c.Delisted
	case model.ChangeUpdated:
		return c.Updated
	}
	return nil
}
