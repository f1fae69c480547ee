package pipeline

import (
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
)

func records(etcdDigest, etcdName string) []model.ArtifactRecord {
	return []model.ArtifactRecord{
		{Name: "cert-utils-operator", Present: true, DisplayName: "Cert Utils", Versions: []model.VersionRecord{{Version: "1.3.10", Tag: "v1.3.10", Present: true, BundleDigest: "sha256:c"}}},
		{Name: "etcd", Present: true, DisplayName: etcdName, Versions: []model.VersionRecord{{Version: "0.9.4", Tag: "v0.9.4", Present: true, BundleDigest: etcdDigest}}},
	}
}

// TestUpdatedOneCatalogFile: with one rendered catalog for the cluster
// (the olm target), a commit whose only catalog change is etcd's bundle
// does not report the source edit of cert-utils-operator that changed
// nothing in the catalog.
func TestUpdatedOneCatalogFile(t *testing.T) {
	prev, next := records("sha256:e1", "etcd"), records("sha256:e2", "etcd")
	changes := []catalog.Change{{Path: "rendered/edge/catalog/catalog.yaml", Data: []byte("x")}}
	got := updatedInCatalog(render.Changes{}, []string{"cert-utils-operator 1.3.10", "etcd 0.9.4"}, changes, "edge", prev, next)
	if strings.Join(got, ",") != "etcd 0.9.4" {
		t.Errorf("updated %q, want only etcd 0.9.4", got)
	}
}

// TestUpdatedDisplayNameBesideUpgrade: a display name changed back in the
// same commit as a new version of the artifact is reported: the upgrade's
// line does not say the Artifact changed.
func TestUpdatedDisplayNameBesideUpgrade(t *testing.T) {
	prev, next := records("sha256:e", "etcd (renamed)"), records("sha256:e", "etcd")
	next[1].Versions = append(next[1].Versions, model.VersionRecord{Version: "0.9.5", Tag: "v0.9.5", Present: true})
	changes := []catalog.Change{{Path: "rendered/global/etcd/artifact_etcd.yaml"}, {Path: "rendered/global/etcd/artifactversion_etcd.v0.9.5.yaml"}}
	ch := render.Diff(prev, next)
	got := updatedInCatalog(ch, nil, changes, "global", prev, next)
	if strings.Join(got, ",") != "etcd" {
		t.Errorf("updated %q, want etcd (its display name changed)", got)
	}
	// The display name unchanged: the upgrade says it all.
	prev[1].DisplayName = "etcd"
	if got := updatedInCatalog(ch, nil, changes[1:], "global", prev, next); len(got) != 0 {
		t.Errorf("updated %q, want nothing beside the upgrade", got)
	}
}
