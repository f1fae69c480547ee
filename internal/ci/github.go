package ci

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	githubactions "github.com/sethvargo/go-githubactions"

	"github.com/operator-publish/publish/internal/lint"
)

// outputDelimiter is the heredoc delimiter go-githubactions v1.3.0 writes to
// GITHUB_OUTPUT (a constant, not random as in @actions/core): a value
// holding it on a line of its own would end the value early and let the rest
// set other outputs, so SetOutput refuses such values.
const outputDelimiter = "_GitHubActionsFileCommandDelimeter_"

type github struct {
	w      io.Writer
	getenv func(string) string
	a      *githubactions.Action
}

func newGitHub(getenv func(string) string, w io.Writer) *github {
	return &github{w: w, getenv: getenv,
		a: githubactions.New(githubactions.WithWriter(w), githubactions.WithGetenv(getenv))}
}

func (g *github) Name() string { return GitHub }

// guard runs fn, which calls go-githubactions, turning its panics into an
// error.
func guard(what string, fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %v", what, r)
		}
	}()
	fn()
	return nil
}

// warn prints a ::warning:: workflow command, ignoring write errors: it is
// the fallback of last resort and must not panic.
func (g *github) warn(msg string) {
	c := githubactions.Command{Name: "warning", Message: "publish: " + msg}
	fmt.Fprintln(g.w, c.String())
}

func (g *github) Mask(secret string) {
	if strings.TrimSpace(secret) == "" {
		return
	}
	vals := []string{secret}
	// The runner masks a multi-line value only line by line.
	if strings.ContainsAny(secret, "\r\n") {
		for _, l := range strings.Split(strings.ReplaceAll(secret, "\r\n", "\n"), "\n") {
			if l = strings.TrimSuffix(l, "\r"); strings.TrimSpace(l) != "" {
				vals = append(vals, l)
			}
		}
	}
	for _, v := range vals {
		// A failed write cannot leak the secret: nothing was printed.
		_ = guard("add-mask", func() { g.a.AddMask(v) })
	}
}

// fileCommand checks that the GitHub file command env names a writable
// file: go-githubactions panics otherwise.
func (g *github) fileCommand(env string) error {
	p := g.getenv(env)
	if p == "" {
		return errUnset
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

var errUnset = errors.New("not set")

func (g *github) SetOutput(name, value string) error {
	if err := checkOutputName(name); err != nil {
		return err
	}
	if strings.Contains(value, outputDelimiter) {
		g.warn(fmt.Sprintf("output %s not set: its value contains the GITHUB_OUTPUT delimiter", name))
		return fmt.Errorf("output %s: value contains the GITHUB_OUTPUT delimiter %s", name, outputDelimiter)
	}
	if err := g.fileCommand("GITHUB_OUTPUT"); err != nil {
		g.warn(fmt.Sprintf("output %s not set: GITHUB_OUTPUT: %v", name, err))
		if err == errUnset {
			return nil
		}
		return fmt.Errorf("output %s: GITHUB_OUTPUT: %w", name, err)
	}
	if err := guard("GITHUB_OUTPUT", func() { g.a.SetOutput(name, value) }); err != nil {
		g.warn(fmt.Sprintf("output %s not set: %v", name, err))
		return fmt.Errorf("output %s: %w", name, err)
	}
	return nil
}

func (g *github) Summary(markdown string) error {
	if err := g.fileCommand("GITHUB_STEP_SUMMARY"); err != nil {
		g.warn(fmt.Sprintf("job summary not written: GITHUB_STEP_SUMMARY: %v", err))
		if err == errUnset {
			return nil
		}
		return fmt.Errorf("job summary: GITHUB_STEP_SUMMARY: %w", err)
	}
	if err := guard("GITHUB_STEP_SUMMARY", func() { g.a.AddStepSummary(markdown) }); err != nil {
		g.warn(fmt.Sprintf("job summary not written: %v", err))
		return fmt.Errorf("job summary: %w", err)
	}
	return nil
}

// Annotate prints one workflow command per finding:
// ::error col=C,file=P,line=L,title=RULE::MESSAGE (warning for warnings,
// notice otherwise), properties escaped for % CR LF : , and the message for
// % CR LF, as the workflow command spec and @actions/core do.
func (g *github) Annotate(fs []lint.Finding) {
	for _, f := range fs {
		_ = guard("annotation", func() { g.a.IssueCommand(annotation(f)) })
	}
}

func annotation(f lint.Finding) *githubactions.Command {
	props := githubactions.CommandProperties{"title": f.Rule}
	if f.Path != "" {
		props["file"] = f.Path
	}
	if f.Line > 0 {
		props["line"] = strconv.Itoa(f.Line)
		if f.Column > 0 {
			props["col"] = strconv.Itoa(f.Column)
		}
	}
	name := "notice"
	switch f.Severity {
	case lint.Error:
		name = "error"
	case lint.Warning:
		name = "warning"
	}
	return &githubactions.Command{Name: name, Properties: props, Message: describe(f, "\n", "")}
}

func (g *github) PullRequest() (bool, string) {
	switch g.getenv("GITHUB_EVENT_NAME") {
	case "pull_request", "pull_request_target":
		return true, g.getenv("GITHUB_BASE_REF")
	}
	return false, ""
}
