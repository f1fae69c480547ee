package logging

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/operator-publish/publish/internal/redact"
)

// Clean returns s safe to print as a line (or lines) of a log or of a CI
// job's output, whatever values from a package repo, a registry or a
// forge it quotes:
//
//   - the user information of every URL is dropped (redact.Text), so that
//     a token in a clone URL is never printed;
//   - control characters other than tab and line feed (carriage return,
//     escape sequences that redraw a terminal or open a GitLab log
//     section) are written as Go escapes (\r, \x1b);
//   - a line that a CI system would run as a command, that is one whose
//     first non-blank characters are "::" (GitHub Actions workflow
//     commands, https://docs.github.com/actions/reference/workflow-commands-for-github-actions)
//     or "##[" (their older form, also read by Azure Pipelines), is
//     written quoted (strconv.Quote), so that it is shown and never run.
//
// Line breaks are kept: multi-line errors stay readable. The workflow
// commands publish itself writes (annotations, masks, outputs) go through
// internal/ci, never through Clean.
func Clean(s string) string {
	s = redact.Text(s)
	if !strings.ContainsFunc(s, needsCleaning) && !strings.Contains(s, "::") && !strings.Contains(s, "##[") {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = cleanLine(l)
	}
	return strings.Join(lines, "\n")
}

// needsCleaning reports a control character other than tab and line feed.
func needsCleaning(r rune) bool { return r != '\n' && r != '\t' && unicode.IsControl(r) }

func cleanLine(l string) string {
	if t := strings.TrimLeftFunc(l, unicode.IsSpace); strings.HasPrefix(t, "::") || strings.HasPrefix(t, "##[") {
		return strconv.Quote(l)
	}
	if !strings.ContainsFunc(l, needsCleaning) {
		return l
	}
	var b strings.Builder
	for _, r := range l {
		switch {
		case r == '\r':
			b.WriteString(`\r`)
		case needsCleaning(r) && r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case needsCleaning(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
