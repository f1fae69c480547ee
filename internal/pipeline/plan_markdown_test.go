package pipeline

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
	p.summarise()
	md := p.Markdown()
	for _, want := range []string{"### Lint: 1 error, 0 warnings", "warning waived: upstream icon"} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
}
