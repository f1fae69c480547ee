package delivery

import (
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/report"
)

// TestPRBodyLimit: a plan whose diff does not fit the forge's limit loses
// the diff first (saying where the full plan is), then is cut at a line;
// the marker always ends the body, and the body stays under the limit.
func TestPRBodyLimit(t *testing.T) {
	p := &report.Plan{Cluster: "prod", Artifacts: []report.PlanArtifact{{Name: "a", Action: "listed", Versions: []report.PlanVersion{{Version: "1.0.0", Action: "added"}}}}, Findings: []lint.Finding{}}
	p.Diff = strings.Repeat("+"+strings.Repeat("a long line of the rendered diff ", 6)+"\n", 5000)
	p.Summarise(nil)
	m := Marker{Cluster: "prod", Head: strings.Repeat("a", 40), Tree: strings.Repeat("b", 40)}
	full := Body(p, 0, "https://ci/job", "/tmp/plan/prod.md", m)
	if !strings.Contains(full, "```diff") || !strings.HasSuffix(full, m.String()+"\n") {
		t.Fatalf("unlimited body lacks the diff or the marker")
	}
	body := Body(p, 65536, "https://ci/job", "/tmp/plan/prod.md", m)
	if len(body) > 65536 || strings.Contains(body, "```diff") || !strings.Contains(body, "too long for the pull request") || !strings.Contains(body, "https://ci/job") || !strings.Contains(body, "`prod.md`") || !strings.HasSuffix(body, m.String()+"\n") {
		t.Fatalf("body at GitHub's limit (%d runes):\n%s", len(body), body)
	}
	for i := 0; i < 3000; i++ {
		p.Artifacts = append(p.Artifacts, report.PlanArtifact{Name: "artifact-with-a-long-name", Action: "listed", Versions: []report.PlanVersion{{Version: "1.0.0", Action: "added"}}})
	}
	body = Body(p, 65536, "", "", m)
	if n := len(body); n > 65536 || !strings.Contains(body, "the plan is cut here") || !parseMarkerOK(body, m) {
		t.Fatalf("cut body: %d runes, marker %v", n, ParseMarker(body))
	}
}

func parseMarkerOK(body string, m Marker) bool { return ParseMarker(body) == m }
