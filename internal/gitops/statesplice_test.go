package gitops

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/model"
)

// TestStateIndexMarshal: the state written from an index with some
// entries replaced, added or tombstoned is byte for byte what
// State.Marshal writes for the whole state, for random states.
func TestStateIndexMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	art := func(i int) model.ArtifactRecord {
		a := model.ArtifactRecord{Name: fmt.Sprintf("op-%03d", i), Present: r.IntN(4) > 0, Registry: "dst.example.com", Repository: fmt.Sprintf("mirror/op-%03d-bundle", i), DisplayName: "Op", Description: "line one\nline two: with a colon"}
		for v := 1; v <= 1+r.IntN(4); v++ {
			a.Versions = append(a.Versions, model.VersionRecord{Version: fmt.Sprintf("1.%d.0", v), Tag: fmt.Sprintf("v1.%d.0", v), Present: r.IntN(3) > 0, Path: fmt.Sprintf("packages/op-%03d/1.%d.0/manifest.yaml", i, v)})
		}
		return a
	}
	for round := 0; round < 20; round++ {
		n := r.IntN(30)
		var all []model.ArtifactRecord
		for i := 0; i < n; i++ {
			all = append(all, art(i))
		}
		old := &State{Source: Source{Repo: "https://git.example.com/p.git", Commit: "aaaa"}, Artifacts: all, Rendered: map[string]string{"global": "sha256:1"}}
		data, err := old.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		idx, err := SplitState(StatePath("global"), data)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		// Replace some, add some.
		var touched []model.ArtifactRecord
		next := map[string]model.ArtifactRecord{}
		for _, a := range all {
			next[a.Name] = a
		}
		for k := 0; k < r.IntN(5); k++ {
			a := art(r.IntN(n + 5))
			a.Present = !a.Present
			touched = append(touched, a)
			next[a.Name] = a
		}
		header := &State{Source: Source{Repo: "https://git.example.com/p.git", Commit: "bbbb"}, Rendered: map[string]string{"global": "sha256:2", "c1": "sha256:3"}}
		if round%2 == 1 {
			header.OCI = map[string]OCIRecord{
				"global": {Ref: "registry.example.com/platform/operator-catalog:global", Digest: "sha256:" + strings.Repeat("a", 64)},
				"c1":     {Ref: "registry.example.com/platform/operator-catalog:c1", Digest: "sha256:" + strings.Repeat("b", 64)},
			}
		}
		if round%4 == 1 {
			// Approval records (pull-request clusters) sit in the header.
			header.Approvals = []model.ApprovalRecord{{PullRequest: 7, Commit: strings.Repeat("c", 40), Approvers: []string{"alice"},
				Digests: []model.ApprovedDigest{{Artifact: "op-001", Version: "1.1.0", BundleDigest: "sha256:" + strings.Repeat("d", 64)}}}}
		}
		got, err := idx.Marshal(header, dedupeByName(touched))
		if err != nil {
			t.Fatal(err)
		}
		whole := &State{Source: header.Source, Rendered: header.Rendered, OCI: header.OCI, Approvals: header.Approvals}
		for _, a := range next {
			whole.Artifacts = append(whole.Artifacts, a)
		}
		want, err := whole.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("round %d: spliced state differs:\n--- spliced\n%s\n--- whole\n%s", round, got, want)
		}
		if _, err := ParseState(StatePath("global"), got); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		// The OCI records survive the split of the written file.
		if again, err := SplitState(StatePath("global"), got); err != nil {
			t.Fatalf("round %d: %v", round, err)
		} else if len(again.Header.OCI) != len(header.OCI) || len(again.Header.Approvals) != len(header.Approvals) {
			t.Fatalf("round %d: split header has OCI %v, want %v", round, again.Header.OCI, header.OCI)
		}
	}
}

func dedupeByName(arts []model.ArtifactRecord) []model.ArtifactRecord {
	last := map[string]int{}
	for i, a := range arts {
		last[a.Name] = i
	}
	var out []model.ArtifactRecord
	for i, a := range arts {
		if last[a.Name] == i {
			out = append(out, a)
		}
	}
	return out
}
