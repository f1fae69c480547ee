package ci

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/lint"
)

// fakeEnv is a getenv over a map.
func fakeEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDetect(t *testing.T) {
	noTekton(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, None},
		{map[string]string{"GITHUB_ACTIONS": "true"}, GitHub},
		{map[string]string{"GITHUB_ACTIONS": "false"}, None},
		{map[string]string{"GITLAB_CI": "true"}, GitLab},
		{map[string]string{EnvTektonResultsDir: dir}, Tekton},
		{map[string]string{"GITLAB_CI": "true", EnvCI: "tekton"}, Tekton},
		{map[string]string{"GITHUB_ACTIONS": "true", EnvCI: " None "}, None},
		{map[string]string{"GITHUB_ACTIONS": "true", EnvCI: "jenkins", "INPUT_DST-PASSWORD": "pw"}, GitHub},
	} {
		var out bytes.Buffer
		if got := Detect(fakeEnv(tc.env), &out).Name(); got != tc.want {
			t.Errorf("Detect(%v) = %s, want %s", tc.env, got, tc.want)
		}
		if tc.env[EnvCI] == "jenkins" && !strings.HasPrefix(out.String(), "::add-mask::pw\n::warning::publish: PUBLISH_CI=\"jenkins\"") {
			t.Errorf("unknown PUBLISH_CI: want the masks, then a warning; output %q", out.String())
		}
	}
	statDir = func(p string) bool { return p == DefaultTektonResults }
	if got := Detect(fakeEnv(nil), &bytes.Buffer{}).Name(); got != Tekton {
		t.Errorf("with /tekton/results: %s, want tekton", got)
	}
}

// noTekton makes /tekton/results absent for the test.
func noTekton(t *testing.T) {
	old := statDir
	statDir = func(string) bool { return false }
	t.Cleanup(func() { statDir = old })
}

func githubEnv(t *testing.T, extra map[string]string) (Env, *bytes.Buffer, map[string]string) {
	t.Helper()
	noTekton(t)
	dir := t.TempDir()
	m := map[string]string{
		"GITHUB_ACTIONS":      "true",
		"GITHUB_OUTPUT":       filepath.Join(dir, "output"),
		"GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary"),
	}
	for k, v := range extra {
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	var out bytes.Buffer
	e := Detect(fakeEnv(m), &out)
	if e.Name() != GitHub {
		t.Fatalf("Detect: %s", e.Name())
	}
	return e, &out, m
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// parseGitHubOutput reads a GITHUB_OUTPUT file as the runner does: name=value
// lines, or name<<DELIM, the value's lines, then DELIM alone on a line.
func parseGitHubOutput(t *testing.T, data string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(data, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if name, delim, ok := strings.Cut(l, "<<"); ok && !strings.Contains(name, "=") {
			var val []string
			for i++; ; i++ {
				if i == len(lines) {
					t.Fatalf("GITHUB_OUTPUT: value of %s never ends (delimiter %s):\n%s", name, delim, data)
				}
				if lines[i] == delim {
					break
				}
				val = append(val, lines[i])
			}
			if _, dup := out[name]; dup {
				t.Errorf("GITHUB_OUTPUT sets %s twice", name)
			}
			out[name] = strings.Join(val, "\n")
			continue
		}
		name, val, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("GITHUB_OUTPUT: line %q is not an output", l)
		}
		if _, dup := out[name]; dup {
			t.Errorf("GITHUB_OUTPUT sets %s twice", name)
		}
		out[name] = val
	}
	return out
}

// TestGitHubOutput: every value round-trips through GITHUB_OUTPUT, among
// them one holding go-githubactions' fixed delimiter and one that would
// inject another output if the heredoc ended early.
func TestGitHubOutput(t *testing.T) {
	e, out, m := githubEnv(t, nil)
	const old = "_GitHubActionsFileCommandDelimeter_"
	want := map[string]string{
		"changed":   "true",
		"artifacts": "hello-operator\nqueue-operator",
		"commit":    "x\n" + old + "\nchanged=false",
		"plan-json": "ends with a newline\n",
		"empty":     "",
	}
	for _, n := range []string{"changed", "artifacts", "commit", "plan-json", "empty"} {
		if err := e.SetOutput(n, want[n]); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	if err := e.SetOutput("bad name", "x"); err == nil {
		t.Error("bad output name: no error")
	}
	data := readFile(t, m["GITHUB_OUTPUT"])
	got := parseGitHubOutput(t, data)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GITHUB_OUTPUT read back as %q, want %q\n%s", got, want, data)
	}
	// A fresh delimiter per value.
	delims := map[string]bool{}
	for _, l := range strings.Split(data, "\n") {
		if _, d, ok := strings.Cut(l, "<<"); ok {
			delims[d] = true
		}
	}
	if len(delims) != len(want) {
		t.Errorf("%d delimiters for %d values", len(delims), len(want))
	}
	if out.Len() != 0 {
		t.Errorf("outputs printed %q", out.String())
	}

	// A delimiter that collides with the value is drawn again.
	e, _, m = githubEnv(t, nil)
	seq := []string{"ghadelimiter_x", "ghadelimiter_y"}
	orig := newDelimiter
	newDelimiter = func() string { d := seq[0]; seq = seq[1:]; return d }
	defer func() { newDelimiter = orig }()
	if err := e.SetOutput("commit", "a\nghadelimiter_x\nchanged=false"); err != nil {
		t.Fatal(err)
	}
	if got := parseGitHubOutput(t, readFile(t, m["GITHUB_OUTPUT"])); got["commit"] != "a\nghadelimiter_x\nchanged=false" || len(got) != 1 {
		t.Errorf("colliding delimiter: read back %q", got)
	}
}

func TestGitHubSummary(t *testing.T) {
	e, _, m := githubEnv(t, nil)
	if err := os.WriteFile(m["GITHUB_STEP_SUMMARY"], []byte("earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, md := range []string{"## publish plan", "| a | b |\n|---|---|"} {
		if err := e.Summary(md); err != nil {
			t.Fatal(err)
		}
	}
	want := "earlier step\n## publish plan\n| a | b |\n|---|---|\n"
	if got := readFile(t, m["GITHUB_STEP_SUMMARY"]); got != want {
		t.Errorf("summary:\n%q\nwant\n%q", got, want)
	}
}

// go-githubactions panics when GITHUB_OUTPUT or GITHUB_STEP_SUMMARY is unset
// or unwritable, and when stdout fails: none of it may reach the user.
func TestGitHubNoPanic(t *testing.T) {
	t.Run("unset", func(t *testing.T) {
		e, out, _ := githubEnv(t, map[string]string{"GITHUB_OUTPUT": "", "GITHUB_STEP_SUMMARY": ""})
		if err := e.SetOutput("changed", "true"); err != nil {
			t.Errorf("SetOutput: %v, want nil and a warning", err)
		}
		if err := e.Summary("# x"); err != nil {
			t.Errorf("Summary: %v, want nil and a warning", err)
		}
		if got := strings.Count(out.String(), "::warning::"); got != 2 {
			t.Errorf("%d warnings, want 2:\n%s", got, out.String())
		}
	})
	t.Run("unwritable", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		bad := filepath.Join(file, "below-a-file") // cannot be created, even by root
		e, out, _ := githubEnv(t, map[string]string{"GITHUB_OUTPUT": bad, "GITHUB_STEP_SUMMARY": bad})
		if err := e.SetOutput("changed", "true"); err == nil {
			t.Error("SetOutput: no error")
		}
		if err := e.Summary("# x"); err == nil {
			t.Error("Summary: no error")
		}
		if got := strings.Count(out.String(), "::warning::"); got != 2 {
			t.Errorf("%d warnings, want 2:\n%s", got, out.String())
		}
	})
	t.Run("stdout fails", func(t *testing.T) {
		noTekton(t)
		e := Detect(fakeEnv(map[string]string{"GITHUB_ACTIONS": "true", "INPUT_DST-PASSWORD": "pw"}), failWriter{})
		e.Mask("secret")
		e.Annotate([]lint.Finding{{Rule: "r", Severity: lint.Error, Path: "p", Message: "m"}})
		_ = e.SetOutput("changed", "true")
		_ = e.Summary("x")
	})
	t.Run("library panics are recovered", func(t *testing.T) {
		err := guard("test", func() { panic("boom") })
		if err == nil || !strings.Contains(err.Error(), "boom") {
			t.Errorf("guard: %v", err)
		}
	})
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestGitHubAnnotate(t *testing.T) {
	e, out, _ := githubEnv(t, nil)
	e.Annotate([]lint.Finding{
		{Rule: "repo/duplicate-version", Severity: lint.Error, Path: "packages/a,b/x:y%.yaml", Line: 9, Column: 3,
			Message: "50% done\r\nnext: line, two", Hint: "remove one"},
		{Rule: "csv/x:y,z", Severity: lint.Warning, Path: "packages/op/manifest.yaml", Line: 4, BundlePath: "manifests/op.csv.yaml", Message: "m"},
		{Rule: "info", Severity: "info", Path: "p.yaml", Column: 7, Message: "no line"},
		{Rule: "csv/provider", Severity: "waived", Path: "q.yaml", Line: 2, Message: "m", Waiver: "vendor has none"},
	})
	want := "::error col=3,file=packages/a%2Cb/x%3Ay%25.yaml,line=9,title=repo/duplicate-version::50%25 done%0D%0Anext: line, two%0Aremove one\n" +
		"::warning file=packages/op/manifest.yaml,line=4,title=csv/x%3Ay%2Cz::m (bundle file manifests/op.csv.yaml)\n" +
		"::notice file=p.yaml,title=info::no line\n" +
		"::notice file=q.yaml,line=2,title=csv/provider::m (waived: vendor has none)\n"
	if out.String() != want {
		t.Errorf("annotations:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestGitHubMasks(t *testing.T) {
	_, out, _ := githubEnv(t, map[string]string{
		"INPUT_DST-PASSWORD":       "s3cret",
		"INPUT_CATALOG_PASSWORD":   "tok%en ",
		"PUBLISH_SRC_PASSWORD":     "line1\nline2",
		"PUBLISH_DST_PASSWORD":     "s3cret", // once is enough
		"INPUT_DST-USERNAME":       "robot",  // not a secret
		"INPUT_CATALOG-PASSWORD":   "",
		"PUBLISH_CATALOG_USERNAME": "bot",
	})
	want := "::add-mask::tok%25en \n::add-mask::tok%25en\n" +
		"::add-mask::line1%0Aline2\n::add-mask::line1\n::add-mask::line2\n" +
		"::add-mask::s3cret\n"
	if out.String() != want {
		t.Errorf("masks:\n%s\nwant:\n%s", out.String(), want)
	}
	e, out, _ := githubEnv(t, nil)
	e.Mask("")
	e.Mask("x%y")
	if out.String() != "::add-mask::x%25y\n" {
		t.Errorf("Mask: %q", out.String())
	}
}

func TestPullRequest(t *testing.T) {
	noTekton(t)
	for _, tc := range []struct {
		env    map[string]string
		pr     bool
		target string
	}{
		{map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "push", "GITHUB_BASE_REF": ""}, false, ""},
		{map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_BASE_REF": "main"}, true, "main"},
		{map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_BASE_REF": "release"}, true, "release"},
		{map[string]string{"GITLAB_CI": "true", "CI_COMMIT_BRANCH": "main"}, false, ""},
		{map[string]string{"GITLAB_CI": "true", "CI_MERGE_REQUEST_IID": "42", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"}, true, "main"},
		{map[string]string{"CI_MERGE_REQUEST_IID": "42"}, false, ""},
	} {
		pr, target := Detect(fakeEnv(tc.env), &bytes.Buffer{}).PullRequest()
		if pr != tc.pr || target != tc.target {
			t.Errorf("%v: (%v, %q), want (%v, %q)", tc.env, pr, target, tc.pr, tc.target)
		}
	}
}

var findings = []lint.Finding{
	{Rule: lint.RuleDuplicateVersion, Severity: lint.Error, Artifact: "hello", Version: "0.1.0", Path: "packages/hello/0.1.0-copy/manifest.yaml", Line: 7,
		Message: `version 0.1.0 of hello is also declared in packages/hello/0.1.0/manifest.yaml: "AlreadyAdd" <remove one>`},
	{Rule: "csv/provider", Severity: lint.Warning, Artifact: "queue", Version: "2.1.0", Path: "packages/queue/2.1.0/manifest.yaml", Line: 5, Column: 3,
		BundlePath: "manifests/queue.clusterserviceversion.yaml", Message: "provider is empty", Hint: "set metadata.annotations.provider"},
	{Rule: "repo/info", Severity: "info", Path: "publish.yaml", Message: "no line\nsecond line"},
}

func TestGitLabCodeQuality(t *testing.T) {
	noTekton(t)
	dir := t.TempDir()
	report := filepath.Join(dir, "reports", "cq.json")
	var out bytes.Buffer
	e := Detect(fakeEnv(map[string]string{"GITLAB_CI": "true", EnvCodeQuality: report}), &out)
	e.Annotate(findings[:2])
	e.Annotate(findings[2:]) // accumulates
	got := readFile(t, report)

	var issues []struct {
		Type, Description, Fingerprint, Severity string
		CheckName                                string `json:"check_name"`
		Location                                 struct {
			Path  string
			Lines struct{ Begin int }
		}
	}
	if err := json.Unmarshal([]byte(got), &issues); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, got)
	}
	if len(issues) != 3 {
		t.Fatalf("%d issues, want 3", len(issues))
	}
	// Sorted by path: packages/hello, packages/queue, publish.yaml.
	first := issues[0]
	if first.CheckName != lint.RuleDuplicateVersion || first.Severity != "critical" || first.Type != "issue" ||
		first.Location.Path != findings[0].Path || first.Location.Lines.Begin != 7 || len(first.Fingerprint) != 32 {
		t.Errorf("issue 0: %+v", first)
	}
	if issues[1].Severity != "minor" || issues[1].Description != "provider is empty (bundle file manifests/queue.clusterserviceversion.yaml) (set metadata.annotations.provider)" {
		t.Errorf("issue 1: %+v", issues[1])
	}
	if issues[2].Severity != "info" || issues[2].Location.Lines.Begin != 1 || strings.Contains(issues[2].Description, "\n") {
		t.Errorf("issue 2: %+v", issues[2])
	}
	if !strings.Contains(got, `\"AlreadyAdd\" <remove one>`) {
		t.Errorf("HTML-escaped or mangled description:\n%s", got)
	}
	// Stable: the same findings in another order give the same bytes, and
	// the fingerprints do not depend on the line.
	rev := slices.Clone(findings)
	slices.Reverse(rev)
	again, err := CodeQuality(rev)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != got {
		t.Errorf("not stable:\n%s\nvs\n%s", again, got)
	}
	moved := slices.Clone(findings)
	moved[0].Line = 70
	m, _ := CodeQuality(moved)
	if !strings.Contains(string(m), first.Fingerprint) {
		t.Error("fingerprint changed with the line")
	}
	// Pinned: a fingerprint change makes GitLab see every issue as new.
	if first.Fingerprint != goldenFingerprint {
		t.Errorf("fingerprint of finding 0 = %s, want %s", first.Fingerprint, goldenFingerprint)
	}
	// Identical findings get distinct fingerprints.
	dup, _ := CodeQuality([]lint.Finding{findings[0], findings[0]})
	var two []struct{ Fingerprint string }
	if err := json.Unmarshal(dup, &two); err != nil || len(two) != 2 || two[0].Fingerprint == two[1].Fingerprint {
		t.Errorf("duplicates: %v %s", err, dup)
	}
	// Plain lines in the job log too.
	if !strings.Contains(out.String(), "packages/queue/2.1.0/manifest.yaml:5:3: warning: provider is empty") {
		t.Errorf("job log:\n%s", out.String())
	}
}

const goldenFingerprint = "d09a915c165ef2c5c3a905ba50f4d0da" // sha256(rule, path, artifact, version, bundle path, message, each NUL-terminated)[:32 hex]

func TestGitLabEmptyReport(t *testing.T) {
	noTekton(t)
	t.Chdir(t.TempDir())
	e := Detect(fakeEnv(map[string]string{"GITLAB_CI": "true"}), &bytes.Buffer{})
	e.Annotate(nil)
	if got := readFile(t, DefaultCodeQuality); got != "[]\n" {
		t.Errorf("empty report: %q", got)
	}
}

func TestGitLabDotenvAndSummary(t *testing.T) {
	noTekton(t)
	dir := t.TempDir()
	dotenv := filepath.Join(dir, "publish.env")
	report := filepath.Join(dir, "report")
	e := Detect(fakeEnv(map[string]string{"GITLAB_CI": "true", EnvDotenv: dotenv, EnvReportDir: report}), &bytes.Buffer{})
	if err := e.SetOutput("changed", "true"); err != nil {
		t.Fatal(err)
	}
	if err := e.SetOutput("plan-json", "a\nb"); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, dotenv), "PUBLISH_OUTPUT_CHANGED=true\nPUBLISH_OUTPUT_PLAN_JSON=a b\n"; got != want {
		t.Errorf("dotenv %q, want %q", got, want)
	}
	if err := e.Summary("# plan"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(report, SummaryFile)); got != "# plan\n" {
		t.Errorf("summary %q", got)
	}
	// Neither configured: no-ops.
	e = Detect(fakeEnv(map[string]string{"GITLAB_CI": "true"}), &bytes.Buffer{})
	if e.SetOutput("changed", "true") != nil || e.Summary("x") != nil {
		t.Error("unconfigured GitLab outputs fail")
	}
}

// terminationMessage is what Tekton's entrypoint writes for a step's results.
func terminationMessage(t *testing.T, dir string, names ...string) []byte {
	type entry struct {
		Key   string `json:"key"`
		Value string `json:"value"`
		Type  int    `json:"type"`
	}
	es := []entry{{Key: "StartedAt", Value: "2026-01-02T15:04:05.999Z", Type: 3}}
	for _, n := range names {
		es = append(es, entry{Key: n, Value: readFile(t, filepath.Join(dir, n)), Type: 1})
	}
	b, err := json.Marshal(es)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTektonResults(t *testing.T) {
	noTekton(t)
	results, report := t.TempDir(), filepath.Join(t.TempDir(), "report")
	var out bytes.Buffer
	e := Detect(fakeEnv(map[string]string{EnvTektonResultsDir: results, EnvReportDir: report}), &out)
	if e.Name() != Tekton {
		t.Fatal(e.Name())
	}
	commit := strings.Repeat("a", 40)
	// Long and full of characters JSON escapes (<, >, &, quotes, newlines,
	// control characters, non-ASCII), so the encoded size is what counts.
	var long strings.Builder
	for i := 0; long.Len() < 20000; i++ {
		long.WriteString("<op-\"é\"&\x01>\n")
	}
	for _, o := range []struct{ name, value string }{
		{OutputChanged, "true"}, {OutputCommit, commit}, {OutputArtifacts, long.String()}, {OutputPlanJSON, long.String()},
	} {
		if err := e.SetOutput(o.name, o.value); err != nil {
			t.Fatal(err)
		}
	}
	if got := readFile(t, filepath.Join(results, OutputChanged)); got != "true" {
		t.Errorf("changed = %q", got)
	}
	if got := readFile(t, filepath.Join(results, OutputCommit)); got != commit {
		t.Errorf("commit = %q", got)
	}
	arts := readFile(t, filepath.Join(results, OutputArtifacts))
	if !strings.HasSuffix(arts, "[truncated: full value in "+filepath.Join(report, OutputArtifacts)+"]") {
		t.Errorf("artifacts: no pointer to the full value:\n...%s", arts[max(0, len(arts)-120):])
	}
	if kept := arts[:strings.LastIndex(arts, "\n[truncated")]; len(kept) < 100 || !strings.HasPrefix(long.String(), kept) {
		t.Errorf("truncated value (%d bytes) is not a useful prefix of the value", len(kept))
	}
	if got := readFile(t, filepath.Join(report, OutputArtifacts)); got != long.String() {
		t.Error("full value not in the report dir")
	}
	msg := terminationMessage(t, results, OutputChanged, OutputCommit, OutputArtifacts, OutputPlanJSON)
	if len(msg) >= 4096 {
		t.Errorf("termination message %d bytes, Tekton allows 4096", len(msg))
	}
	for _, n := range []string{OutputArtifacts, OutputPlanJSON} {
		if l := len(terminationMessage(t, results, n)); l > TektonResultMax+100 {
			t.Errorf("result %s: %d bytes", n, l)
		}
	}
	if !strings.Contains(out.String(), "truncated") {
		t.Errorf("no notice of the truncation: %q", out.String())
	}

	// Without a report dir the pointer says how to keep the value.
	results2 := t.TempDir()
	e = Detect(fakeEnv(map[string]string{EnvCI: "tekton", EnvTektonResultsDir: results2}), &bytes.Buffer{})
	if err := e.SetOutput(OutputArtifacts, long.String()); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(results2, OutputArtifacts)); !strings.HasSuffix(got, "[truncated: set PUBLISH_REPORT_DIR to keep the full value]") {
		t.Errorf("no hint:\n...%s", got[max(0, len(got)-100):])
	}
	if err := e.SetOutput("../escape", "x"); err == nil {
		t.Error("result name with a path: no error")
	}
	if err := e.Summary("x"); err != nil {
		t.Error(err)
	}
	// Missing results dir: an error, no panic.
	e = Detect(fakeEnv(map[string]string{EnvCI: "tekton", EnvTektonResultsDir: filepath.Join(results2, "missing")}), &bytes.Buffer{})
	if err := e.SetOutput(OutputChanged, "true"); err == nil {
		t.Error("missing results dir: no error")
	}
}

func TestTektonSummaryAndAnnotate(t *testing.T) {
	noTekton(t)
	report := t.TempDir()
	var out bytes.Buffer
	e := Detect(fakeEnv(map[string]string{EnvCI: "tekton", EnvTektonResultsDir: t.TempDir(), EnvReportDir: report}), &out)
	if err := e.Summary("# plan"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(report, SummaryFile)); got != "# plan\n" {
		t.Errorf("summary %q", got)
	}
	e.Annotate(findings[:1])
	if !strings.HasPrefix(out.String(), "packages/hello/0.1.0-copy/manifest.yaml:7: error: ") {
		t.Errorf("annotate: %q", out.String())
	}
}

func TestNone(t *testing.T) {
	noTekton(t)
	var out bytes.Buffer
	e := Detect(fakeEnv(nil), &out)
	e.Mask("secret")
	if err := e.SetOutput("changed", "true"); err != nil {
		t.Error(err)
	}
	if err := e.Summary("# x"); err != nil {
		t.Error(err)
	}
	if pr, _ := e.PullRequest(); pr {
		t.Error("pull request outside CI")
	}
	e.Annotate(findings)
	want := "packages/hello/0.1.0-copy/manifest.yaml:7: error: " + findings[0].Message + " [repo/duplicate-version]\n" +
		"packages/queue/2.1.0/manifest.yaml:5:3: warning: provider is empty (bundle file manifests/queue.clusterserviceversion.yaml) (set metadata.annotations.provider) [csv/provider]\n" +
		"publish.yaml: info: no line second line [repo/info]\n"
	if out.String() != want {
		t.Errorf("plain:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestFlagEnv(t *testing.T) {
	env := map[string]string{
		"GITHUB_ACTIONS":          "true",
		"INPUT_COMMAND":           "plan",
		"INPUT_DST-REGISTRY":      " reg.example.com/ops ",
		"INPUT_SOURCE":            "  ",
		"INPUT_CATALOG_BRANCH":    "release", // shell-safe spelling, accepted too
		"INPUT_IMAGE-PULL-SECRET": "pull-a\n pull-b \n\n",
		"INPUT_PLAIN-HTTP":        "true",
		"INPUT_TARGET-BRANCH":     "main",
		"INPUT_UNKNOWN":           "x",
	}
	got := FlagEnv(fakeEnv(env))
	want := map[string]string{
		"dst-registry":      "reg.example.com/ops",
		"catalog-branch":    "release",
		"image-pull-secret": "pull-a,pull-b",
		"plain-http":        "true",
		"target-branch":     "main",
	}
	if len(got) != len(want) {
		t.Errorf("FlagEnv = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("FlagEnv[%s] = %q, want %q", k, got[k], v)
		}
	}
	delete(env, "GITHUB_ACTIONS")
	if got := FlagEnv(fakeEnv(env)); len(got) != 0 {
		t.Errorf("outside GitHub Actions: %v", got)
	}
	if InputEnv("dst-registry") != "INPUT_DST-REGISTRY" || InputEnv("a b") != "INPUT_A_B" {
		t.Error("InputEnv")
	}
}
