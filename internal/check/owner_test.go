package check

import "testing"

// TestCompareByOwner: a changed object counts for the artifact that owns
// it (an ArtifactVersion's cpaas.io/artifact-version label, an Artifact's
// selector), wherever its file sits below rendered/<cluster>; an object
// of no artifact is the cluster's, even in an artifact's folder.
func TestCompareByOwner(t *testing.T) {
	now := map[string][]byte{
		"rendered/global/misc/artifactversion_etcd.v1.0.0.yaml":  []byte("apiVersion: app.alauda.io/v1alpha1\nkind: ArtifactVersion\nmetadata:\n  name: etcd.v1.0.0\n  labels:\n    cpaas.io/artifact-version: etcd\nspec:\n  tag: v1.0.0\n"),
		"rendered/global/redis/configmap_cpaas-system.note.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: note\n  namespace: cpaas-system\n"),
	}
	arts, other, _ := compare("global", map[string][]byte{}, now)
	if len(arts) != 1 || arts[0].Artifact != "etcd" || len(arts[0].Versions) != 1 || arts[0].Versions[0].Version != "v1.0.0" {
		t.Errorf("artifacts %+v, want etcd v1.0.0 (its label), not misc (its folder)", arts)
	}
	if len(other) != 1 || other[0].Path != "rendered/global/redis/configmap_cpaas-system.note.yaml" {
		t.Errorf("other %+v, want the ConfigMap as the cluster's", other)
	}
}
