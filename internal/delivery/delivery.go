// Package delivery delivers a cluster's change as a pull request.
//
// Propose (propose.go) does the forge side over plain values: it commits
// the change on the catalog tip, force-pushes it to the cluster's rolling
// branch, and opens, updates, leaves or closes the pull request from it
// through a forge.Forge, with the notes and the auto-merge request.
// delivery.go writes its text: the title, the body (the plan in Markdown,
// kept under the forge's limit) with the hidden marker a later run reads
// back, and the full plan files a CI job keeps, all over a report.Plan.
//
// What needs a run stays in internal/pipeline (delivery.go): the
// proposal of each pull-request cluster, made from the cluster's render
// (its changes, its commit message, its plan from clusterPlan), and where
// the Result goes (ClusterResult.PullRequest).
package delivery

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/operator-publish/publish/internal/report"
)

// Marker is what publish writes, hidden, at the end of the body of a pull
// request it opened: the cluster, the rolling branch's commit (Head), its
// tree, the catalog commit it was written on (Base), and the source
// commit. A later run compares them with the forge's head commit to tell
// an unchanged proposal (nothing to do) from a branch someone else pushed
// to.
type Marker struct {
	Cluster, Head, Tree, Base, Source string
}

var markerRE = regexp.MustCompile(`<!-- publish:pull-request ([^>]*) -->`)

// String is the marker as an HTML comment, "<!-- publish:pull-request
// cluster=… head=… tree=… base=… source=… -->", an empty Base or Source
// written as "-"; ParseMarker reads it back.
func (m Marker) String() string {
	return fmt.Sprintf("<!-- publish:pull-request cluster=%s head=%s tree=%s base=%s source=%s -->", m.Cluster, m.Head, m.Tree, orDash(m.Base), orDash(m.Source))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ParseMarker reads the Marker of a pull request's body (Marker.String);
// it returns the zero Marker when there is none (a body someone rewrote).
func ParseMarker(body string) Marker {
	var m Marker
	sub := markerRE.FindStringSubmatch(body)
	if sub == nil {
		return m
	}
	for _, kv := range strings.Fields(sub[1]) {
		k, v, _ := strings.Cut(kv, "=")
		if v == "-" {
			v = ""
		}
		switch k {
		case "cluster":
			m.Cluster = v
		case "head":
			m.Head = v
		case "tree":
			m.Tree = v
		case "base":
			m.Base = v
		case "source":
			m.Source = v
		}
	}
	return m
}

// Title is the title of a cluster's pull request: subject, the commit
// subject of its changes (report.ChangeSubject), naming the cluster.
func Title(subject, cluster string) string {
	return subject + " on cluster " + cluster
}

// maxBodyMargin is kept free below the forge's limit on a body: the
// marker and the link to the full plan.
const maxBodyMargin = 2000

// Body is the body of a cluster's pull request: the plan in Markdown
// (report.Plan.Markdown: the listing changes, the images, the lint
// findings and the rendered diff, collapsed), kept under limit bytes (the
// forge's MaxBody; 0 or less: no limit; bytes are never fewer than
// characters): the diff is left out first, then the plan is cut at a
// line, each time saying where the full plan is (planFile, the Markdown
// file WritePlanFiles wrote, "" when none, in the files of the CI job at
// jobURL, "" when unknown); then the marker m.
func Body(p *report.Plan, limit int, jobURL, planFile string, m Marker) string {
	return BodyWith(p, limit, jobURL, planFile, m, "")
}

// BodyWith is Body with review, the Markdown of the approvals the pull
// request needs and the gate evidence (ReviewMarkdown; "" none), after
// the opening paragraph: it is never cut.
func BodyWith(p *report.Plan, limit int, jobURL, planFile string, m Marker, review string) string {
	where := "the full plan is in the files of the CI job that opened it"
	if planFile != "" {
		where = "the full plan is `" + filepath.Base(planFile) + "` (and its `.json`) in the files of the CI job that opened it"
	}
	if jobURL != "" {
		where += ": " + jobURL
	}
	head := fmt.Sprintf("This pull request was opened by `publish run` for cluster `%s`. Merging it publishes the change below to the cluster; publish re-renders this branch on every run (commits pushed to it are replaced), and closes the pull request when the package repo no longer changes the cluster.\n\n", p.Cluster) + review
	tail := "\n---\n" + upper(where) + ".\n\n" + m.String() + "\n"
	body := head + p.Markdown() + tail
	if limit <= 0 || len(body) <= limit {
		return body
	}
	short := *p
	short.Diff = ""
	note := fmt.Sprintf("> The rendered diff (%d lines) is too long for the pull request: see the *Files changed* tab; %s.\n\n", strings.Count(p.Diff, "\n"), where)
	body = head + note + short.Markdown() + tail
	if len(body) <= limit {
		return body
	}
	budget := limit - len(head+note+tail) - maxBodyMargin
	md := short.Markdown()
	cut := 0
	for i := 0; i < len(md) && i < budget; i++ {
		if md[i] == '\n' {
			cut = i + 1
		}
	}
	return head + note + md[:cut] + "\n… the plan is cut here: " + where + ".\n" + tail
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// WritePlanFiles writes the full plan of a cluster into dir (created if
// need be) as <cluster>.md (report.Plan.Markdown, and the whole diff
// after it when the Markdown cut it at report.MaxDiffLines) and
// <cluster>.json (indented, docs/plan-json.md), for the CI job to keep as
// its files (an artifact); it returns the Markdown file's path, and the
// first error of creating dir or writing either file.
func WritePlanFiles(dir, cluster string, p *report.Plan) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	md := filepath.Join(dir, cluster+".md")
	full := p.Markdown()
	if strings.Count(p.Diff, "\n") > report.MaxDiffLines {
		full += "\n### Full diff\n\n```diff\n" + p.Diff + "\n```\n"
	}
	if err := os.WriteFile(md, []byte(full), 0o644); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return "", err
	}
	return md, os.WriteFile(filepath.Join(dir, cluster+".json"), append(data, '\n'), 0o644)
}
