package render

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/operator-publish/publish/internal/model"
)

// TestSpliceGenerated: the kustomization of the generated base spliced
// with the artifacts generated again equals the one Generated writes for
// the whole catalog, byte for byte, for random catalogs and changes
// (artifacts added, changed, given more or fewer versions).
func TestSpliceGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	art := func(i int) model.ArtifactRecord {
		a := model.ArtifactRecord{Name: fmt.Sprintf("op-%02d", i), Present: true, Registry: "r", Repository: "m/b"}
		for v := 1; v <= 1+r.IntN(4); v++ {
			a.Versions = append(a.Versions, model.VersionRecord{Version: fmt.Sprintf("1.%d.0", v), Tag: fmt.Sprintf("v1.%d.0", v), Present: true})
		}
		return a
	}
	for round := 0; round < 30; round++ {
		n := r.IntN(12)
		byName := map[string]model.ArtifactRecord{}
		var old []model.ArtifactRecord
		for i := 0; i < n; i++ {
			a := art(i)
			old = append(old, a)
			byName[a.Name] = a
		}
		before, err := Generated("global", Config{}, old)
		if err != nil {
			t.Fatal(err)
		}
		var touched []model.ArtifactRecord
		seen := map[string]bool{}
		for k := 0; k < 1+r.IntN(3); k++ {
			a := art(r.IntN(n + 3))
			if seen[a.Name] {
				continue
			}
			seen[a.Name] = true
			touched = append(touched, a)
			byName[a.Name] = a
		}
		model.SortRecords(touched)
		var all []model.ArtifactRecord
		for _, a := range byName {
			all = append(all, a)
		}
		model.SortRecords(all)
		want, err := Generated("global", Config{}, all)
		if err != nil {
			t.Fatal(err)
		}
		gen, err := Generated("global", Config{}, touched)
		if err != nil {
			t.Fatal(err)
		}
		got, err := SpliceGenerated("global", before[GeneratedKustomization("global")], gen)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if string(got) != string(want[GeneratedKustomization("global")]) {
			t.Fatalf("round %d:\n--- spliced\n%s\n--- whole\n%s", round, got, want[GeneratedKustomization("global")])
		}
	}
	if _, err := SpliceGenerated("global", []byte("resources:\n- b/x.yaml\n- a/y.yaml\n"), Files{GeneratedKustomization("global"): []byte("resources: []\n")}); err == nil {
		t.Error("resources out of order: no error")
	}
}
