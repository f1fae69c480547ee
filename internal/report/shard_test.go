package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/shard"
)

// TestShardResultSealed: the result of a part carries the plan's digest,
// the part and its items with their bytes, and a sha256 of its content;
// ReadFile gives it back as written and refuses it once a digest is
// changed, an item dropped, or the sha256 removed.
func TestShardResultSealed(t *testing.T) {
	plan := shard.NewPlan([]shard.Item{
		{Source: "src.example.com/a:1", Repository: "dst.example.com/m/a", Bytes: 300},
		{Source: "src.example.com/b:1", Repository: "dst.example.com/m/b", Bytes: 200},
	})
	s := shard.Shard{Index: 1, Total: 2}
	part := plan.Part(s)
	r := New("mirror")
	r.AddMirror(&mirror.Report{Images: []mirror.Result{{Source: "src.example.com/a:1", Destination: "dst.example.com/m/a:1", Digest: "sha256:" + strings.Repeat("a", 64), SignatureDigests: []string{"sha256:" + strings.Repeat("c", 64)}}}}, nil)
	r.AddShard(s, &plan, part)
	p := filepath.Join(t.TempDir(), "shard-1.json")
	if err := r.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Shard == nil || got.Shard.Plan != plan.Digest || got.Shard.Part != "1/2" || got.Shard.Method != shard.Method || len(got.Shard.Items) != 1 || got.Shard.Bytes != 300 || got.Shard.Copied != 300 || got.Shard.Skipped != 0 {
		t.Errorf("shard block %+v", got.Shard)
	}
	if im := got.Images[0]; im.Bytes != 300 || len(im.Referrers) != 1 || len(got.SHA256) != 64 {
		t.Errorf("image %+v, sha256 %q", im, got.SHA256)
	}
	data, _ := os.ReadFile(p)
	for name, edit := range map[string]func(string) string{
		"digest changed": func(s string) string { return strings.Replace(s, strings.Repeat("a", 64), strings.Repeat("b", 64), 1) },
		"bytes changed":  func(s string) string { return strings.Replace(s, `"bytes": 300`, `"bytes": 301`, 1) },
		"no sha256":      func(s string) string { return strings.Replace(s, `"sha256": "`+got.SHA256+`"`, `"sha256": ""`, 1) },
		"not a report":   func(s string) string { return strings.Replace(s, `"kind": "Report"`, `"kind": "Plan"`, 1) },
	} {
		q := filepath.Join(t.TempDir(), "edited.json")
		edited := edit(string(data))
		if edited == string(data) {
			t.Fatalf("%s: the edit changed nothing", name)
		}
		os.WriteFile(q, []byte(edited), 0o644)
		if _, err := ReadFile(q); err == nil || !strings.Contains(err.Error(), q) {
			t.Errorf("%s: ReadFile: %v, want an error naming the file", name, err)
		}
	}
}
