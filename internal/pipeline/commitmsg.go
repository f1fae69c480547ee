package pipeline

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"

	"github.com/operator-publish/publish/internal/render"
)

// CommitData is what a catalog commit message template
// (--commit-message-template, Go text/template syntax) sees.
type CommitData struct {
	// Subject is publish's own subject line, e.g. "publish: list 1, upgrade 2".
	Subject string
	// Each change as "<artifact> <version>" (or "<artifact> (artifact)").
	Listed, Upgraded, Relisted, Delisted, Updated []string
	// Changes is publish's own body: one section per kind of change.
	Changes string
	// SourceCommit and SourceRepo identify the package repo commit.
	SourceCommit, SourceRepo string
	// Clusters are the changes of each cluster the commit changes, in the
	// order served. With one cluster the fields above are its changes;
	// with several they hold every cluster's (each change once).
	Clusters []ClusterCommitData
}

// ClusterCommitData is one cluster's part of CommitData.
type ClusterCommitData struct {
	Name                                          string
	Listed, Upgraded, Relisted, Delisted, Updated []string
	// Changes is publish's own section of the cluster: one list per kind
	// of change.
	Changes string
}

// ClusterChanges are the changes a commit makes on one cluster.
type ClusterChanges struct {
	Name    string // "" for the one cluster of a run
	Changes render.Changes
}

// templateExec is a parsed commit message template.
type templateExec = *template.Template

// commitMessageClusters is the message of the commit of cs: with one
// cluster (or a nameless one) commitMessage; with several, a subject
// counting every cluster's changes and naming the clusters, one section
// per cluster, and the trailers; or the template's output, with
// CommitData.Clusters.
func commitMessageClusters(tmpl *template.Template, cs []ClusterChanges, sourceCommit, sourceRepo string) (string, error) {
	all := render.Changes{}
	for _, c := range cs {
		all = mergeListings(all, c.Changes)
	}
	data := commitData(all, sourceCommit, sourceRepo)
	if len(cs) == 1 && cs[0].Name == "" {
		data = commitData(cs[0].Changes, sourceCommit, sourceRepo)
	}
	var names []string
	var body strings.Builder
	for _, c := range cs {
		msg := CommitMessage(c.Changes, "", "")
		_, sections, _ := strings.Cut(msg, "\n")
		sections = strings.TrimSpace(sections)
		data.Clusters = append(data.Clusters, ClusterCommitData{
			Name: c.Name, Changes: sections,
			Listed: c.Changes.Listed, Upgraded: c.Changes.Upgraded, Relisted: c.Changes.Relisted, Delisted: c.Changes.Delisted, Updated: c.Changes.Updated,
		})
		if c.Name == "" {
			continue
		}
		names = append(names, c.Name)
		if sections == "" {
			sections = "(no listing changes)"
		}
		body.WriteString("\nCluster " + c.Name + ":\n" + sections + "\n")
	}
	if tmpl == nil && len(names) > 0 {
		subject := strings.TrimSuffix(data.Subject, " (no listing changes)") + " on " + strings.Join(names, ", ")
		var b strings.Builder
		b.WriteString(subject + "\n")
		b.WriteString(body.String())
		if sourceCommit != "" || sourceRepo != "" {
			b.WriteString("\n")
			if sourceCommit != "" {
				b.WriteString("Source-Commit: " + sourceCommit + "\n")
			}
			if sourceRepo != "" {
				b.WriteString("Source-Repo: " + sourceRepo + "\n")
			}
		}
		return b.String(), nil
	}
	return executeCommitTemplate(tmpl, data)
}

func commitData(ch render.Changes, sourceCommit, sourceRepo string) CommitData {
	msg := CommitMessage(ch, "", "")
	subject, body, _ := strings.Cut(msg, "\n")
	return CommitData{
		Subject: subject, Changes: strings.TrimSpace(body),
		Listed: ch.Listed, Upgraded: ch.Upgraded, Relisted: ch.Relisted, Delisted: ch.Delisted, Updated: ch.Updated,
		SourceCommit: sourceCommit, SourceRepo: sourceRepo,
	}
}

// ParseCommitTemplate parses a commit message template and executes it once
// on example data, so that a typo in a field name is reported when the flag
// is read, not after the mirror. Errors name the problem.
func ParseCommitTemplate(text string) (*template.Template, error) {
	t, err := template.New("commit message").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	example := commitData(render.Changes{Listed: []string{"hello-operator 0.3.0"}}, "0123456789abcdef0123456789abcdef01234567", "https://git.example.com/org/operators.git")
	example.Clusters = []ClusterCommitData{{Name: "global", Listed: example.Listed, Changes: example.Changes}}
	if err := t.Execute(&bytes.Buffer{}, example); err != nil {
		return nil, err
	}
	return t, nil
}

// commitMessage is CommitMessage, or the template's output when one is
// given; the Source-Commit and Source-Repo trailers are appended when the
// template did not write them, so every catalog commit names its source.
func commitMessage(tmpl *template.Template, ch render.Changes, sourceCommit, sourceRepo string) (string, error) {
	if tmpl == nil {
		return CommitMessage(ch, sourceCommit, sourceRepo), nil
	}
	d := commitData(ch, sourceCommit, sourceRepo)
	d.Clusters = []ClusterCommitData{{Listed: ch.Listed, Upgraded: ch.Upgraded, Relisted: ch.Relisted, Delisted: ch.Delisted, Updated: ch.Updated, Changes: d.Changes}}
	return executeCommitTemplate(tmpl, d)
}

// executeCommitTemplate runs the template on d (nil: the message is
// CommitMessage's), and appends the trailers the template did not write.
func executeCommitTemplate(tmpl *template.Template, d CommitData) (string, error) {
	sourceCommit, sourceRepo := d.SourceCommit, d.SourceRepo
	if tmpl == nil {
		return CommitMessage(render.Changes{Listed: d.Listed, Upgraded: d.Upgraded, Relisted: d.Relisted, Delisted: d.Delisted, Updated: d.Updated}, sourceCommit, sourceRepo), nil
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, d); err != nil {
		return "", fmt.Errorf("--commit-message-template: %w", err)
	}
	msg := strings.TrimSpace(b.String())
	if msg == "" {
		return "", fmt.Errorf("--commit-message-template: the message is empty")
	}
	var trailers []string
	if sourceCommit != "" && !strings.Contains(msg, "Source-Commit: ") {
		trailers = append(trailers, "Source-Commit: "+sourceCommit)
	}
	if sourceRepo != "" && !strings.Contains(msg, "Source-Repo: ") {
		trailers = append(trailers, "Source-Repo: "+sourceRepo)
	}
	if len(trailers) > 0 {
		msg += "\n\n" + strings.Join(trailers, "\n")
	}
	return msg + "\n", nil
}
