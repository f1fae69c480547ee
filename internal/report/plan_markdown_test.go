package report

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/model"
)

// TestPlanMarkdownWaived: the plan summary counts in the singular when it
// should and shows a waived finding's reason and original severity.
func TestPlanMarkdownWaived(t *testing.T) {
	p := &Plan{Cluster: "global", Findings: []lint.Finding{
		{Rule: "images/tag", Severity: lint.Error, Path: "packages/a/1/manifest.yaml", Line: 3, Message: "bad"},
		{Rule: "manifest/icon", Severity: lint.Waived, OriginalSeverity: lint.Warning, Waiver: "upstream icon", Path: "packages/a/1/manifest.yaml", Line: 9, Message: "no icon"},
	}}
	p.Summarise(nil)
	md := p.Markdown()
	for _, want := range []string{"### Lint: 1 error, 0 warnings", "warning waived: upstream icon"} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
}

// TestPlanUnknownHeadline: a headline with several reasons for unknown
// images counts each, most frequent first, with what to do when one is a
// refusal, and the table gives each artifact's unknown count.
func TestPlanUnknownHeadline(t *testing.T) {
	img := func(at, reason string) PlanImage { return PlanImage{AtDestination: at, UnknownReason: reason} }
	p := &Plan{Cluster: "global", Artifacts: []PlanArtifact{{Name: "a", Action: "listed", Versions: []PlanVersion{{Version: "1", Action: "added", Images: []PlanImage{
		img("missing", ""), img("unknown", "no answer: connection refused"), img("unknown", ReasonDenied), img("unknown", ReasonDenied),
	}}}}}}
	p.Summarise(nil)
	if s := p.Summary; s.ImagesToCopy != 4 || s.ImagesMissing != 1 || s.ImagesUnknown != 3 {
		t.Fatalf("summary %+v", s)
	}
	md := p.Markdown()
	for _, want := range []string{
		"4 images to mirror: 1 missing, 3 unknown at the destination (2 denied (403), 1 no answer: connection refused; give the plan job read credentials for --dst-registry to know).",
		"| `a` | listed | 1 (added) | 4 (1, 3) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// TestPlanSignatures: Summarise sorts each artifact's verified images
// into signed, unsigned and failed (each image once, even when two
// versions name it); the JSON has the three lists ([] when empty) and no
// signatures field for an artifact nothing verified; the Markdown counts
// them per artifact.
func TestPlanSignatures(t *testing.T) {
	ver := func(img, status string, none bool) PlanImage {
		return PlanImage{Source: img, Verification: &model.Verification{Image: img, Status: status, Mode: model.VerifyModeIfSigned, Digest: "sha256:1", NoSignature: none}}
	}
	p := &Plan{Cluster: "global", Artifacts: []PlanArtifact{
		{Name: "a", Action: "listed", Versions: []PlanVersion{
			{Version: "1", Action: "added", Images: []PlanImage{ver("r/signed:1", model.VerifyVerified, false), ver("r/plain:1", model.VerifyUnsigned, true), ver("r/bundle:1", model.VerifyVerified, false)}},
			{Version: "2", Action: "added", Images: []PlanImage{ver("r/signed:1", model.VerifyVerified, false), ver("r/foreign:2", model.VerifyUntrusted, false)}},
		}},
		{Name: "b", Action: "listed", Versions: []PlanVersion{{Version: "1", Action: "added", Images: []PlanImage{{Source: "r/b:1"}}}}},
		{Name: "c", Action: "listed", Versions: []PlanVersion{{Version: "1", Action: "added", Images: []PlanImage{ver("r/c:1", model.VerifyVerified, false)}}}},
	}}
	p.Summarise(nil)
	s := p.Artifacts[0].Signatures
	if s == nil || !slices.Equal(s.Signed, []string{"r/signed:1", "r/bundle:1"}) || !slices.Equal(s.Unsigned, []string{"r/plain:1"}) || !slices.Equal(s.Failed, []string{"r/foreign:2"}) {
		t.Errorf("a: %+v", s)
	}
	if p.Artifacts[1].Signatures != nil {
		t.Errorf("b, nothing verified: %+v", p.Artifacts[1].Signatures)
	}
	data, err := json.Marshal(p.Artifacts)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"signatures":{"signed":["r/signed:1","r/bundle:1"],"unsigned":["r/plain:1"],"failed":["r/foreign:2"]}`, `"signatures":{"signed":["r/c:1"],"unsigned":[],"failed":[]}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON lacks %s:\n%s", want, data)
		}
	}
	if strings.Count(string(data), `"signatures"`) != 2 {
		t.Errorf("JSON: %s", data)
	}
	if md := p.Markdown(); !strings.Contains(md, "### Signatures: 5 images\n\n- `a`: 2 signed, 1 unsigned, 1 failed\n- `c`: 1 signed, 0 unsigned, 0 failed\n\n| image |") {
		t.Errorf("markdown:\n%s", md)
	}
}
