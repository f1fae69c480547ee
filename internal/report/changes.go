package report

import (
	"fmt"
	"strings"

	"github.com/operator-publish/publish/internal/model"
)

// changeWords are the words each kind of change is reported with: the
// commit subject's verb, the run's result line, the commit message's
// section title and the job summary's label.
var changeWords = map[model.ChangeKind]struct{ verb, line, section, summary string }{
	model.ChangeListed:   {"list", "listed", "Listed", "Listed"},
	model.ChangeUpgraded: {"upgrade", "upgraded", "Upgraded", "Upgraded"},
	model.ChangeRelisted: {"relist", "relisted", "Relisted", "Relisted"},
	model.ChangeDelisted: {"delist", "delisted", "Delisted", "Delisted"},
	model.ChangeUpdated:  {"update", "updated", "Updated in place", "Updated"},
}

// ChangeSubject is the subject of a catalog commit of cs, which is also
// the pull-request title's start: "publish: list 1, upgrade 2" (one count
// per kind present, in report order), or "publish: update catalog (no
// listing changes)".
func ChangeSubject(cs []model.Change) string {
	n := model.CountChanges(cs)
	var parts []string
	for _, k := range model.ChangeKinds {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", changeWords[k].verb, n[k]))
		}
	}
	if len(parts) == 0 {
		return "publish: update catalog (no listing changes)"
	}
	return "publish: " + strings.Join(parts, ", ")
}

// ChangeSections is the body of a catalog commit of cs: for each kind
// present, "\n<Title>:\n- <item>\n...".
func ChangeSections(cs []model.Change) string {
	var b strings.Builder
	for _, k := range model.ChangeKinds {
		first := true
		for _, c := range cs {
			if c.Kind != k {
				continue
			}
			if first {
				b.WriteString("\n" + changeWords[k].section + ":\n")
				first = false
			}
			b.WriteString("- " + c.Item() + "\n")
		}
	}
	return b.String()
}

// ResultLines are the lines `publish run` prints for cs, one per change:
// "<kind, 9 columns> <item><suffix>", e.g. "listed    tiny 1.0.0" (suffix
// " (cluster a)" on a run of several clusters).
func ResultLines(cs []model.Change, suffix string) []string {
	var out []string
	for _, c := range byKind(cs) {
		out = append(out, fmt.Sprintf("%-9s %s%s", changeWords[c.Kind].line, c.Item(), suffix))
	}
	return out
}

// SummaryLines are the Markdown list items of the job summary for cs:
// "- **Listed** `tiny 1.0.0`".
func SummaryLines(cs []model.Change) []string {
	var out []string
	for _, c := range byKind(cs) {
		out = append(out, fmt.Sprintf("- **%s** `%s`", changeWords[c.Kind].summary, c.Item()))
	}
	return out
}

// byKind is cs in report order, each kind's in the order given.
func byKind(cs []model.Change) []model.Change {
	var out []model.Change
	for _, k := range model.ChangeKinds {
		for _, c := range cs {
			if c.Kind == k {
				out = append(out, c)
			}
		}
	}
	return out
}
