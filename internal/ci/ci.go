package ci

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/operator-publish/publish/internal/lint"
)

// Env is the CI system publish runs in.
type Env interface {
	// Name is "github", "gitlab", "tekton" or "none".
	Name() string
	// Mask hides secret in the rest of the job log (GitHub: ::add-mask::,
	// each line of a multi-line secret too). Elsewhere a no-op: GitLab masks
	// its masked variables itself, Tekton and plain logs cannot. Never prints
	// the secret anywhere else.
	Mask(secret string)
	// SetOutput records a step output (GitHub), a task result (Tekton) or a
	// dotenv variable (GitLab, when PUBLISH_DOTENV_REPORT is set). name is
	// [A-Za-z0-9] with inner '-' and '_'.
	SetOutput(name, value string) error
	// Summary appends Markdown to the job summary (GitHub) or to
	// $PUBLISH_REPORT_DIR/summary.md (GitLab, Tekton).
	Summary(markdown string) error
	// Annotate reports findings at their file:line: workflow commands
	// (GitHub), a Code Quality report plus plain lines (GitLab), plain lines
	// (Tekton, none). Call it once with every finding, also with none: GitLab
	// then gets an empty report, which clears the merge request widget.
	// Paths must be relative to the repository root.
	Annotate(fs []lint.Finding)
	// PullRequest says whether the job runs for a pull (merge) request, and
	// its target branch.
	PullRequest() (bool, string)
}

// Names of the CI systems.
const (
	GitHub = "github"
	GitLab = "gitlab"
	Tekton = "tekton"
	None   = "none"
)

// Environment variables of publish's own that Detect and the Envs read.
const (
	EnvCI                = "PUBLISH_CI"                 // github, gitlab, tekton, none: skip detection
	EnvReportDir         = "PUBLISH_REPORT_DIR"         // GitLab, Tekton: where Summary and full Tekton results go
	EnvCodeQuality       = "PUBLISH_CODEQUALITY_REPORT" // GitLab: Code Quality report path
	EnvDotenv            = "PUBLISH_DOTENV_REPORT"      // GitLab: dotenv report path for outputs
	EnvTektonResultsDir  = "PUBLISH_TEKTON_RESULTS_DIR" // Tekton: results directory
	DefaultCodeQuality   = "gl-code-quality-report.json"
	DefaultTektonResults = "/tekton/results"
	SummaryFile          = "summary.md" // in PUBLISH_REPORT_DIR
)

// Output names publish sets (action.yml outputs, Tekton results).
const (
	OutputChanged   = "changed"   // "true" when the catalog got a commit (run) or would (plan)
	OutputArtifacts = "artifacts" // artifacts listed, upgraded, relisted, delisted or updated in the catalog, one per line
	OutputCommit    = "commit"    // the catalog commit, empty when none
	OutputPlanJSON  = "plan-json" // path of the JSON plan (plan)
	OutputMatrix    = "matrix"    // the parts of a split run as JSON (plan --matrix)
	// OutputClusters is a JSON array, one object per cluster the run
	// served (run): {"cluster", "delivery" (push or pull-request),
	// "commit" (the run's commit for that cluster: on the catalog branch
	// for push, on the rolling branch for pull-request; "" when none),
	// "changed" (the catalog branch got a commit for it), "pr" and
	// "prNumber" (the pull request's URL and number, "" for push),
	// "prAction" (opened, updated, unchanged, closed) and "branch" (the
	// rolling branch)}.
	OutputClusters = "clusters"
)

// statDir reports whether p is a directory; a variable for tests.
var statDir = func(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Detect returns the Env of the CI system getenv describes (nil: os.Getenv).
// Messages, workflow commands and plain findings go to stdout (nil:
// os.Stdout). On GitHub it masks every secret input and PUBLISH_*_PASSWORD
// first, so call it before printing anything.
func Detect(getenv func(string) string, stdout io.Writer) Env {
	if getenv == nil {
		getenv = os.Getenv
	}
	if stdout == nil {
		stdout = os.Stdout
	}
	name := strings.ToLower(strings.TrimSpace(getenv(EnvCI)))
	var warning string
	switch name {
	case GitHub, GitLab, Tekton, None:
	case "":
		name = detect(getenv)
	default:
		warning = fmt.Sprintf("%s=%q is not one of github, gitlab, tekton, none: detected %s", EnvCI, name, detect(getenv))
		name = detect(getenv)
	}
	var env Env
	switch name {
	case GitHub:
		g := newGitHub(getenv, stdout)
		// Masks first: nothing may be printed before them.
		for _, s := range Secrets(getenv) {
			g.Mask(s)
		}
		if warning != "" {
			g.warn(warning)
		}
		return g
	case GitLab:
		env = &gitlab{plain: plain{w: stdout}, getenv: getenv}
	case Tekton:
		dir := getenv(EnvTektonResultsDir)
		if dir == "" {
			dir = DefaultTektonResults
		}
		env = &tekton{plain: plain{w: stdout}, resultsDir: dir, reportDir: getenv(EnvReportDir)}
	default:
		env = &plain{w: stdout}
	}
	if warning != "" {
		fmt.Fprintln(stdout, "publish: warning:", warning)
	}
	return env
}

func detect(getenv func(string) string) string {
	switch {
	case getenv("GITHUB_ACTIONS") == "true":
		return GitHub
	case getenv("GITLAB_CI") == "true":
		return GitLab
	case getenv(EnvTektonResultsDir) != "" || statDir(DefaultTektonResults):
		return Tekton
	}
	return None
}

var outputName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?$`)

func checkOutputName(name string) error {
	if !outputName.MatchString(name) {
		return fmt.Errorf("output name %q: use letters, digits, inner '-' and '_'", name)
	}
	return nil
}

// FormatFinding is the plain form of a finding: `path:line:col: severity:
// message [rule]`, line and column left out when unknown.
func FormatFinding(f lint.Finding) string {
	var b strings.Builder
	b.WriteString(f.Path)
	if f.Line > 0 {
		fmt.Fprintf(&b, ":%d", f.Line)
		if f.Column > 0 {
			fmt.Fprintf(&b, ":%d", f.Column)
		}
	}
	sev := string(f.Severity)
	if sev == "" {
		sev = "info"
	}
	fmt.Fprintf(&b, ": %s: %s [%s]", sev, oneLine(describe(f, " (", ")")), f.Rule)
	return b.String()
}

// describe is the message with the bundle file, the waiver and the hint,
// the hint between open and close. A waived finding (severity "waived") is a
// notice on GitHub and "info" in GitLab's report.
func describe(f lint.Finding, open, close string) string {
	msg := f.Message
	if f.BundlePath != "" {
		msg += " (bundle file " + f.BundlePath + ")"
	}
	if f.Waiver != "" {
		msg += " (waived: " + f.Waiver + ")"
	}
	if f.Hint != "" {
		msg += open + f.Hint + close
	}
	return msg
}

// oneLine folds line breaks so a finding stays one line.
func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\r\n", " ")
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}

// appendFile appends data to path, creating it and its directory.
func appendFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// plain is the Env of no CI system; the others embed it.
type plain struct{ w io.Writer }

func (p *plain) Name() string                   { return None }
func (p *plain) Mask(string)                    {}
func (p *plain) SetOutput(name, _ string) error { return checkOutputName(name) }
func (p *plain) Summary(string) error           { return nil }
func (p *plain) PullRequest() (bool, string)    { return false, "" }

// Annotate prints one plain line per finding.
func (p *plain) Annotate(fs []lint.Finding) {
	for _, f := range fs {
		fmt.Fprintln(p.w, FormatFinding(f))
	}
}

// reportSummary appends markdown to dir/summary.md; no-op without dir.
func reportSummary(dir, markdown string) error {
	if dir == "" {
		return nil
	}
	if !strings.HasSuffix(markdown, "\n") {
		markdown += "\n"
	}
	if err := appendFile(filepath.Join(dir, SummaryFile), []byte(markdown)); err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	return nil
}

// JobURL returns the web page of the CI job getenv describes (nil:
// os.Getenv), where its files (artifacts) are listed: GitHub Actions'
// run page ($GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID,
// whose artifacts are at the bottom), GitLab's job artifacts
// ($CI_JOB_URL/artifacts/browse); "" elsewhere (Tekton has no such page).
// The variables are the CI systems' documented predefined ones.
func JobURL(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch detect(getenv) {
	case GitHub:
		server, repo, id := getenv("GITHUB_SERVER_URL"), getenv("GITHUB_REPOSITORY"), getenv("GITHUB_RUN_ID")
		if server == "" || repo == "" || id == "" {
			return ""
		}
		return strings.TrimSuffix(server, "/") + "/" + repo + "/actions/runs/" + id
	case GitLab:
		if u := getenv("CI_JOB_URL"); u != "" {
			return strings.TrimSuffix(u, "/") + "/artifacts/browse"
		}
	}
	return ""
}
