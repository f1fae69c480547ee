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
	var b bytes.Buffer
	if err := tmpl.Execute(&b, commitData(ch, sourceCommit, sourceRepo)); err != nil {
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
