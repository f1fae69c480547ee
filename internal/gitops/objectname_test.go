package gitops

import (
	"strings"
	"testing"
)

// TestStateObjectName: objectName is optional (a state file without it
// reads as before), kept through Marshal and SplitState, and validated.
func TestStateObjectName(t *testing.T) {
	old := "apiVersion: publish.operator-publish.io/v1alpha2\nkind: PublishState\nsource: {}\nartifacts:\n- name: etcd\n  present: true\n  registry: r.example\n  repository: p/etcd\n  versions:\n  - version: 0.9.4\n    tag: v0.9.4\n    present: true\n"
	s, err := ParseState(StatePath("global"), []byte(old))
	if err != nil || s.Artifacts[0].Versions[0].ObjectName != "" {
		t.Fatalf("%v %+v", err, s)
	}
	s.Artifacts[0].Versions[0].ObjectName = "etcd-v0.9.4"
	data, err := s.Marshal()
	if err != nil || !strings.Contains(string(data), "objectName: etcd-v0.9.4") {
		t.Fatalf("%v\n%s", err, data)
	}
	idx, err := SplitState(StatePath("global"), data)
	if err != nil {
		t.Fatal(err)
	}
	a, ok, err := idx.Artifact("etcd")
	if err != nil || !ok || a.Versions[0].ObjectName != "etcd-v0.9.4" {
		t.Fatalf("%v %v %+v", err, ok, a)
	}
	bad := strings.Replace(string(data), "objectName: etcd-v0.9.4", "objectName: Etcd_V0.9.4", 1)
	if _, err := ParseState(StatePath("global"), []byte(bad)); err == nil || !strings.Contains(err.Error(), `objectName "Etcd_V0.9.4" is not a valid object name`) {
		t.Errorf("bad objectName: %v", err)
	}
}
