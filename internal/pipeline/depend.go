package pipeline

import (
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/model"
)

// listed is what a cluster lists besides the versions its scope selected,
// for lint's dependency/missing (lint.Listing): lintStage completes it
// with the selected versions once they are read.
type listed struct {
	// cluster is the cluster's name.
	cluster string
	// unread returns the published record of an artifact the scope did
	// not read (the incremental way's untouched artifacts: their entries
	// of the cluster's state file), ok false for an artifact the scope
	// read or the state does not hold. The error is the state entry's
	// that does not parse.
	unread func(name string) (a model.ArtifactRecord, ok bool, err error)
	// selects is the cluster's selection (ClusterOptions.selects).
	selects func(artifact string) bool
	// beyond says that the state may list versions of artifacts the scope
	// did not read (the scope does not cover every artifact of the
	// state), whose bundles are then not in the run.
	beyond bool
}

// listing returns what the cluster of s lists besides the selected
// versions: on the full way nothing (an artifact of the state with no
// manifest selected is delisted), on the incremental way the untouched
// artifacts as the state lists them.
func (s *scope) listing() *listed {
	return &listed{cluster: s.o.Cluster, unread: s.way.published, selects: s.o.cluster.selects, beyond: !s.coversAll()}
}

// lintListing is the lint.Listing of the cluster of l (nil when l is nil:
// no cluster, no dependency/missing) once the versions vs, the cluster's
// selection, are read: a package's versions are those of vs when vs has
// any (vs holds every version of an artifact the scope read), else those
// the state lists of it, present, when the selection takes it; it is
// Complete when every version of vs was read and nothing is listed
// beyond vs.
func lintListing(l *listed, vs []*model.Version) *lint.Listing {
	if l == nil {
		return nil
	}
	byArtifact := map[string][]string{}
	complete := !l.beyond
	for _, v := range vs {
		a := v.Manifest.Artifact
		byArtifact[a] = append(byArtifact[a], v.Manifest.Version.String())
		complete = complete && v.Content != nil && v.ReadErr == nil
	}
	return &lint.Listing{
		Cluster:  l.cluster,
		Complete: complete,
		Versions: func(pkg string) ([]string, error) {
			if vs, ok := byArtifact[pkg]; ok {
				return vs, nil
			}
			a, ok, err := l.unread(pkg)
			if err != nil || !ok || !a.Present || !l.selects(pkg) {
				return nil, err
			}
			var out []string
			for _, v := range a.Versions {
				if v.Present {
					out = append(out, v.Version)
				}
			}
			return out, nil
		},
	}
}
