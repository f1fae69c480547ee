package ci

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/operator-publish/publish/internal/lint"
)

type gitlab struct {
	plain
	getenv   func(string) string
	findings []lint.Finding // every finding annotated so far
}

func (g *gitlab) Name() string { return GitLab }

// SetOutput appends a variable to the dotenv report $PUBLISH_DOTENV_REPORT
// (expose it as artifacts:reports:dotenv): PUBLISH_OUTPUT_<NAME>, '-' as '_'
// (not PUBLISH_<NAME>: a later job's publish would read PUBLISH_PLAN_JSON as
// its --plan-json).
// GitLab's dotenv has no multi-line values: line breaks become spaces.
// Without PUBLISH_DOTENV_REPORT a no-op.
func (g *gitlab) SetOutput(name, value string) error {
	if err := checkOutputName(name); err != nil {
		return err
	}
	path := g.getenv(EnvDotenv)
	if path == "" {
		return nil
	}
	key := "PUBLISH_OUTPUT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	line := key + "=" + strings.TrimSpace(oneLine(value)) + "\n"
	if err := appendFile(path, []byte(line)); err != nil {
		fmt.Fprintf(g.w, "publish: warning: output %s not written to %s: %v\n", name, EnvDotenv, err)
		return fmt.Errorf("output %s: %w", name, err)
	}
	return nil
}

func (g *gitlab) Summary(markdown string) error {
	return reportSummary(g.getenv(EnvReportDir), markdown)
}

// Annotate prints plain lines to the job log and (re)writes the Code Quality
// report with every finding annotated so far.
func (g *gitlab) Annotate(fs []lint.Finding) {
	g.plain.Annotate(fs)
	g.findings = append(g.findings, fs...)
	path := g.getenv(EnvCodeQuality)
	if path == "" {
		path = DefaultCodeQuality
	}
	data, err := CodeQuality(g.findings)
	if err == nil {
		if dir := filepath.Dir(path); dir != "." {
			err = os.MkdirAll(dir, 0o755)
		}
		if err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintf(g.w, "publish: warning: code quality report %s not written: %v\n", path, err)
	}
}

func (g *gitlab) PullRequest() (bool, string) {
	if g.getenv("CI_MERGE_REQUEST_IID") != "" {
		return true, g.getenv("CI_MERGE_REQUEST_TARGET_BRANCH_NAME")
	}
	return false, ""
}

// codeQualityIssue is one entry of a GitLab Code Quality report (a subset of
// the Code Climate issue format GitLab reads).
type codeQualityIssue struct {
	Type        string              `json:"type"`
	CheckName   string              `json:"check_name"`
	Description string              `json:"description"`
	Severity    string              `json:"severity"`
	Fingerprint string              `json:"fingerprint"`
	Location    codeQualityLocation `json:"location"`
}

type codeQualityLocation struct {
	Path  string `json:"path"`
	Lines struct {
		Begin int `json:"begin"`
	} `json:"lines"`
}

// CodeQualitySeverity maps a lint severity to GitLab's (info, minor, major,
// critical, blocker): an error stops the run, critical; a warning, minor.
func CodeQualitySeverity(s lint.Severity) string {
	switch s {
	case lint.Error:
		return "critical"
	case lint.Warning:
		return "minor"
	}
	return "info"
}

// CodeQuality renders findings as a GitLab Code Quality report: a JSON array,
// sorted, so the same findings give the same bytes in any order. A
// fingerprint hashes the rule, path, artifact, version, bundle file and
// message, not the line: moving a finding does not make it new. Identical
// findings get distinct fingerprints by occurrence. No findings give [].
func CodeQuality(fs []lint.Finding) ([]byte, error) {
	sorted := slices.Clone(fs)
	slices.SortStableFunc(sorted, compareFindings)
	issues := make([]codeQualityIssue, 0, len(sorted))
	seen := map[string]int{}
	for _, f := range sorted {
		h := sha256.New()
		for _, s := range []string{f.Rule, f.Path, f.Artifact, f.Version, f.BundlePath, f.Message} {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
		base := hex.EncodeToString(h.Sum(nil))
		n := seen[base]
		seen[base] = n + 1
		fp := base
		if n > 0 {
			sum := sha256.Sum256([]byte(base + "#" + strconv.Itoa(n)))
			fp = hex.EncodeToString(sum[:])
		}
		is := codeQualityIssue{
			Type:        "issue",
			CheckName:   f.Rule,
			Description: oneLine(describe(f, " (", ")")),
			Severity:    CodeQualitySeverity(f.Severity),
			Fingerprint: fp[:32],
		}
		is.Location.Path = f.Path
		is.Location.Lines.Begin = max(f.Line, 1)
		issues = append(issues, is)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(issues); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func compareFindings(a, b lint.Finding) int {
	return cmp.Or(
		cmp.Compare(a.Path, b.Path),
		cmp.Compare(a.Line, b.Line),
		cmp.Compare(a.Column, b.Column),
		cmp.Compare(a.Rule, b.Rule),
		cmp.Compare(a.Severity, b.Severity),
		cmp.Compare(a.Artifact, b.Artifact),
		cmp.Compare(a.Version, b.Version),
		cmp.Compare(a.BundlePath, b.BundlePath),
		cmp.Compare(a.Message, b.Message),
		cmp.Compare(a.Hint, b.Hint),
	)
}
