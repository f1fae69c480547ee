package ci

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	githubactions "github.com/sethvargo/go-githubactions"

	"github.com/operator-publish/publish/internal/lint"
)

// newDelimiter returns a fresh heredoc delimiter for one GITHUB_OUTPUT
// value, as @actions/core writes ("ghadelimiter_" and a random UUID's worth
// of hex). go-githubactions v1.3.0 uses one fixed delimiter and so must
// refuse a value holding it; a random one per value lets every value
// through. It is a variable so that a test can make it collide.
var newDelimiter = func() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "ghadelimiter_" + hex.EncodeToString(b[:])
}

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
	if err := g.fileCommand("GITHUB_OUTPUT"); err != nil {
		g.warn(fmt.Sprintf("output %s not set: GITHUB_OUTPUT: %v", name, err))
		if err == errUnset {
			return nil
		}
		return fmt.Errorf("output %s: GITHUB_OUTPUT: %w", name, err)
	}
	if err := appendOutput(g.getenv("GITHUB_OUTPUT"), name, value); err != nil {
		g.warn(fmt.Sprintf("output %s not set: %v", name, err))
		return fmt.Errorf("output %s: %w", name, err)
	}
	return nil
}

// appendOutput appends name=value to the GITHUB_OUTPUT file at path in the
// runner's multi-line form (name<<DELIM, the value, DELIM, each line ended
// by LF), with a delimiter that occurs nowhere in the value, in one write.
// The runner reads the value back exactly, except that it reads a lone CR
// as a line break.
func appendOutput(path, name, value string) error {
	delim := newDelimiter()
	for i := 0; strings.Contains(value, delim); i++ {
		if i == 10 {
			return errors.New("no heredoc delimiter found that the value does not contain")
		}
		delim = newDelimiter()
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("GITHUB_OUTPUT: %w", err)
	}
	_, err = f.WriteString(name + "<<" + delim + "\n" + value + "\n" + delim + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("GITHUB_OUTPUT: %w", err)
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
