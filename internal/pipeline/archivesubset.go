package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
)

// pushSubset is the part of an archive one push publishes to one site:
// the artifacts PushOptions.Only names, among those the cluster's
// selection (PushOptions.Selection) takes. Its zero value is the whole
// archive.
type pushSubset struct {
	only []string
	sel  ClusterOptions
	// names are the artifacts of the subset once the archive was read
	// (select_); nil: every artifact.
	names map[string]bool
}

// whole reports whether the subset is the whole archive.
func (s *pushSubset) whole() bool { return len(s.only) == 0 && s.sel.selection() == "" }

// takes reports whether the subset takes artifact.
func (s *pushSubset) takes(artifact string) bool { return s.names == nil || s.names[artifact] }

// selectImages is archive.PushOptions.Select for the subset: from the
// archive's PackageManifests and bundles, the artifacts it carries (a
// PackageManifest whose bundle is in the archive), the subset among them,
// and the images to push: those an artifact of the subset needs
// (archive.AnnotationArtifacts). An entry that names no artifact (an
// archive written before that annotation) is pushed unless it is the
// bundle of an artifact outside the subset. Errors: a *FlagError for an
// --only name the archive does not carry, listing those it carries, and
// for a subset that takes none of them (the cluster's selection).
func (s *pushSubset) selectImages(c *archive.Contents) (func(archive.IndexEntry) bool, error) {
	bundles := map[string]bool{}
	for _, im := range c.Images {
		if im.Bundle && im.Catalog == "" && im.Subject == "" {
			bundles[im.Ref] = true
		}
	}
	carried := map[string]bool{}
	owner := map[string]string{} // bundle reference -> artifact
	for _, f := range c.Packages {
		m, err := manifest.Parse("packages/"+f.Path, f.Data)
		if err != nil {
			continue // publishArchive reports it
		}
		if bundles[m.Spec.Artifact] {
			carried[m.Artifact] = true
			owner[m.Spec.Artifact] = m.Artifact
		}
	}
	var missing []string
	for _, n := range s.only {
		if !carried[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, &FlagError{Flag: "--only", Err: fmt.Errorf("%s: the archive carries no images of %s; it carries %s", strings.Join(missing, ", "), "them", orNone(sortedKeys(carried)))}
	}
	s.names = map[string]bool{}
	for n := range carried {
		if (len(s.only) == 0 || slices.Contains(s.only, n)) && s.sel.selects(n) {
			s.names[n] = true
		}
	}
	if len(s.names) == 0 && len(s.only) > 0 {
		return nil, &FlagError{Flag: "--only", Err: fmt.Errorf("%s: cluster %s (publish.yaml clusters.%s include/exclude) selects none of them: nothing to push", strings.Join(s.only, ", "), s.sel.Name, s.sel.Name)}
	}
	if len(s.names) == 0 {
		return nil, &FlagError{Flag: "--cluster", Err: fmt.Errorf("cluster %s (publish.yaml clusters.%s include/exclude) selects none of the artifacts the archive carries (%s): nothing to push", s.sel.Name, s.sel.Name, orNone(sortedKeys(carried)))}
	}
	return func(e archive.IndexEntry) bool {
		names := e.Artifacts()
		if len(names) == 0 {
			a, isBundle := owner[e.Ref]
			return !e.Bundle || !isBundle || s.names[a]
		}
		for _, n := range names {
			if s.names[n] {
				return true
			}
		}
		return false
	}, nil
}

// outside returns the records of previous whose artifacts the subset does
// not take, as they are listed (present versions only): publishArchive
// adds them to its current records so that the catalog keeps them as the
// state has them, neither listed anew nor delisted.
func (s *pushSubset) outside(previous []model.ArtifactRecord) []model.ArtifactRecord {
	var out []model.ArtifactRecord
	for _, a := range previous {
		if !a.Present || s.takes(a.Name) {
			continue
		}
		t := a
		t.Versions = nil
		for _, v := range a.Versions {
			if v.Present {
				t.Versions = append(t.Versions, v)
			}
		}
		out = append(out, t)
	}
	return out
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// describe names the subset for the log: "--only a,b" or "cluster edge's
// selection".
func (s *pushSubset) describe() string {
	if len(s.only) > 0 {
		return "--only " + strings.Join(s.only, ",")
	}
	return "cluster " + s.sel.Name + "'s selection"
}

// CheckSelection checks the include and exclude patterns of c (path.Match
// patterns of publish.yaml clusters.<name>). Errors: an *InputError naming
// publish.yaml and the pattern.
func CheckSelection(c ClusterOptions) error { return c.checkPatterns() }
