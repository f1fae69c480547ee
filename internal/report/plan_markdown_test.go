package report

import (
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/lint"
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
