package render

import (
	"testing"

	"github.com/operator-publish/publish/internal/model"
)

// TestRecordedObjectName: a version whose state entry records its
// ArtifactVersion name (publish import) is rendered under that name; the
// others under <artifact>.<tag>.
func TestRecordedObjectName(t *testing.T) {
	arts := []model.ArtifactRecord{{Name: "etcd", Present: true, Registry: "r.example", Repository: "p/etcd", Versions: []model.VersionRecord{
		{Version: "0.9.2", Tag: "v0.9.2", Present: true, ObjectName: "etcd-v0.9.2-violet"},
		{Version: "0.9.4", Tag: "v0.9.4", Present: true},
	}}}
	var names []string
	for _, o := range Objects(Config{}, arts) {
		if o["kind"] == "ArtifactVersion" {
			names = append(names, o["metadata"].(Object)["name"].(string))
		}
	}
	if len(names) != 2 || names[0] != "etcd-v0.9.2-violet" || names[1] != "etcd.v0.9.4" {
		t.Errorf("names %v", names)
	}
}
