package pipeline

import (
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/delivery"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/report"
)

// TestOneRendererOfChanges: the result lines, the job summary lines, the
// commit message and the pull-request title are written from the same
// typed list, in the same order, with the same counts.
func TestOneRendererOfChanges(t *testing.T) {
	ch := render.Changes{
		Listed:   []string{"tiny 1.0.0, 1.1.0"},
		Upgraded: []string{"etcd 0.9.5"},
		Relisted: []string{"etcd 0.9.3"},
		Delisted: []string{"old (artifact)"},
		Updated:  []string{"cert-utils-operator"},
	}
	cs := ch.List()
	lines := strings.Join(report.ResultLines(cs, " (cluster a)"), "\n")
	if want := "listed    tiny 1.0.0, 1.1.0 (cluster a)\nupgraded  etcd 0.9.5 (cluster a)\nrelisted  etcd 0.9.3 (cluster a)\ndelisted  old (artifact) (cluster a)\nupdated   cert-utils-operator (cluster a)"; lines != want {
		t.Errorf("result lines:\n%s\nwant:\n%s", lines, want)
	}
	summary := strings.Join(report.SummaryLines(cs), "\n")
	if want := "- **Listed** `tiny 1.0.0, 1.1.0`\n- **Upgraded** `etcd 0.9.5`\n- **Relisted** `etcd 0.9.3`\n- **Delisted** `old (artifact)`\n- **Updated** `cert-utils-operator`"; summary != want {
		t.Errorf("summary:\n%s", summary)
	}
	subject := "publish: list 1, upgrade 1, relist 1, delist 1, update 1"
	msg := CommitMessage(ch, "abc", "")
	if want := subject + "\n\nListed:\n- tiny 1.0.0, 1.1.0\n\nUpgraded:\n- etcd 0.9.5\n\nRelisted:\n- etcd 0.9.3\n\nDelisted:\n- old (artifact)\n\nUpdated in place:\n- cert-utils-operator\n\nSource-Commit: abc\n"; msg != want {
		t.Errorf("commit message:\n%s", msg)
	}
	if got := delivery.Title(report.ChangeSubject(cs), "a"); got != subject+" on cluster a" {
		t.Errorf("pull-request title %q", got)
	}
	if got := report.ChangeSubject(nil); got != "publish: update catalog (no listing changes)" {
		t.Errorf("empty subject %q", got)
	}
}
