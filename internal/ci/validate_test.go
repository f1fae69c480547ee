package ci

// Every CI file of the repo checked by its own platform's validator
// (docs/testing.md "CI files"): GitHub workflows by actionlint, used as a
// library; the Tekton Task by Tekton's own API types and validation
// (hack/tektoncheck, a module of its own). GitLab has no offline validator:
// its files keep the shape tests of packaging_test.go.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"

	"github.com/operator-publish/publish/internal/testenv"
)

// workflowGlobs are the GitHub Actions workflows of the repo, relative to
// its root: ours, the package repo's example and the catalog template's.
var workflowGlobs = []string{
	".github/workflows/*.yml",
	".github/workflows/*.yaml",
	"examples/github/*.yml",
	"examples/github/*.yaml",
	"catalog-repo-template/.github/workflows/*.yml",
	"catalog-repo-template/.github/workflows/*.yaml",
}

func workflowFiles(t *testing.T) []string {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, g := range workflowGlobs {
		m, err := filepath.Glob(filepath.Join(abs, g))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	return files
}

// actionlintFiles runs actionlint on files with the repo root as working directory
// (local actions and reusable workflows, ./..., resolve from there) and
// returns its findings. shellcheck and pyflakes are not run: their results
// would depend on what the machine has installed.
func actionlintFiles(t *testing.T, files []string) []*actionlint.Error {
	t.Helper()
	abs, _ := filepath.Abs(root)
	var out bytes.Buffer
	l, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{WorkingDir: abs})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.LintFiles(files, nil)
	if err != nil {
		t.Fatalf("actionlint: %v", err)
	}
	return errs
}

func TestActionlint(t *testing.T) {
	files := workflowFiles(t)
	abs, _ := filepath.Abs(root)
	var rel []string
	for _, f := range files {
		r, _ := filepath.Rel(abs, f)
		rel = append(rel, filepath.ToSlash(r))
	}
	// The set is what the globs find; these must be among them.
	for _, want := range []string{".github/workflows/ci.yml", ".github/workflows/release.yml", "examples/github/publish.yml", "catalog-repo-template/.github/workflows/publish-check.yml"} {
		if !slices.Contains(rel, want) {
			t.Errorf("%s not found: workflows %v", want, rel)
		}
	}
	errs := actionlintFiles(t, files)
	for _, e := range errs {
		r, err := filepath.Rel(abs, e.Filepath)
		if err != nil || strings.HasPrefix(r, "..") {
			r = e.Filepath
		}
		t.Errorf("%s:%d:%d: %s [%s]", filepath.ToSlash(r), e.Line, e.Column, e.Message, e.Kind)
	}
	if len(errs) == 0 {
		t.Logf("actionlint: %d workflows clean: %v", len(files), rel)
	}
}

// The validator does find what it should: a workflow with an unknown
// permission scope and a bad expression fails at its lines.
func TestActionlintFindsErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte(`on: push
permissions:
  contents: read
  tokens: write
jobs:
  a:
    runs-on: ubuntu-latest
    steps:
      - run: echo ${{ github.nosuchfield.x }}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	errs := actionlintFiles(t, []string{bad})
	lines := map[int]bool{}
	for _, e := range errs {
		lines[e.Line] = true
	}
	if !lines[4] || !lines[9] {
		t.Errorf("findings %v, want lines 4 (unknown permission) and 9 (unknown property)", errs)
	}
}

// tektoncheck runs the binary of hack/tektoncheck/build.sh ($PUBLISH_TEKTONCHECK)
// on files and returns its output and whether it passed.
func tektoncheck(t *testing.T, files ...string) (string, bool) {
	t.Helper()
	bin := os.Getenv("PUBLISH_TEKTONCHECK")
	if bin == "" {
		testenv.Skip(t, "PUBLISH_TEKTONCHECK is unset: PUBLISH_TEKTONCHECK=\"$(hack/tektoncheck/build.sh)\" validates the Tekton Task with Tekton's own Go API (tektoncd/pipeline v1.10.0)")
	}
	out, err := exec.Command(bin, files...).CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("%s: %v", bin, err)
		}
	}
	return string(out), err == nil
}

// The Tasks and the Pipeline of the examples are valid for Tekton's
// admission webhook: strict decoding into v1.Task or v1.Pipeline,
// defaults, Validate with the default configuration on create.
func TestTektonTaskValidates(t *testing.T) {
	for _, rel := range []string{"examples/tekton/task.yaml", "examples/tekton/pipeline-shards.yaml"} {
		out, ok := tektoncheck(t, filepath.Join(root, rel))
		if !ok {
			t.Errorf("%s is not valid for Tekton:\n%s", rel, out)
		} else if out != "" {
			t.Logf("tektoncheck: %s", out)
		}
	}
}

// tektoncheck refuses a Pipeline Tekton refuses: a finally task named as
// one of its tasks.
func TestTektonCheckRefusesPipeline(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(root, "examples/tekton/pipeline-shards.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	old := "    - name: merge\n      taskRef:"
	if !bytes.Contains(good, []byte(old)) {
		t.Fatalf("pipeline-shards.yaml has no %q: update the case", old)
	}
	f := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(f, bytes.Replace(good, []byte(old), []byte("    - name: shard\n      taskRef:"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, ok := tektoncheck(t, f); ok || !strings.Contains(out, "Pipeline operator-publish-shards") || !strings.Contains(out, "spec.finally[0].name") {
		t.Errorf("passed %v, output %q, want a failure of the Pipeline naming spec.finally[0].name", ok, out)
	}
}

// tektoncheck refuses what Tekton refuses: an unknown field, a step without
// an image, a reference to an undeclared parameter.
func TestTektonCheckRefuses(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(root, "examples/tekton/task.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct{ old, new, want string }{
		"unknown field":      {"  steps:\n", "  stepz: []\n  steps:\n", `unknown field "stepz"`},
		"step without image": {"      image: $(params.image)\n", "", "missing field(s): spec.steps[0].Image"},
		"undeclared param":   {"$(params.image)", "$(params.nosuchparam)", `non-existent variable in "$(params.nosuchparam)"`},
		"not a Task":         {"kind: Task", "kind: PipelineRun", "want tekton.dev/v1 Task or Pipeline"},
	}
	dir := t.TempDir()
	for name, c := range cases {
		if !bytes.Contains(good, []byte(c.old)) {
			t.Fatalf("%s: task.yaml has no %q: update the case", name, c.old)
		}
		f := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		if err := os.WriteFile(f, bytes.Replace(good, []byte(c.old), []byte(c.new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		out, ok := tektoncheck(t, f)
		if ok || !strings.Contains(out, c.want) || !strings.Contains(out, f) {
			t.Errorf("%s: passed %v, output %q, want a failure naming %s and %q", name, ok, out, f, c.want)
		}
	}
}

// The release workflow's first job refuses a tag that is not the version
// action.yml runs: the script it calls, run here on action.yml as it is and
// on a copy that names another version.
func TestCheckReleaseTag(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		testenv.Skip(t, "no bash")
	}
	script := filepath.Join(root, ".github/scripts/check-release-tag.sh")
	run := func(args ...string) (string, int) {
		out, err := exec.Command(bash, append([]string{script}, args...)...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	action := filepath.Join(root, "action.yml")
	if out, code := run(ReleaseVersion, action); code != 0 {
		t.Errorf("tag %s, action.yml as it is: exit %d\n%s", ReleaseVersion, code, out)
	}
	out, code := run("v99.0.0", action)
	if code != 1 || !strings.Contains(out, "::error file="+action+",line=") || !strings.Contains(out, ImageRepository+":v99.0.0") {
		t.Errorf("tag v99.0.0: exit %d, want 1 with an error annotation naming action.yml's line\n%s", code, out)
	}
	// A copy whose image is the Dockerfile (a release without the bump).
	data, err := os.ReadFile(action)
	if err != nil {
		t.Fatal(err)
	}
	copyFile := filepath.Join(t.TempDir(), "action.yml")
	if err := os.WriteFile(copyFile, bytes.Replace(data, []byte("image: "+ActionImage()), []byte("image: Dockerfile"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := run(ReleaseVersion, copyFile); code != 1 || !strings.Contains(out, "'Dockerfile'") {
		t.Errorf("image Dockerfile: exit %d, want 1\n%s", code, out)
	}
	if _, code := run(); code != 2 {
		t.Errorf("no tag: exit %d, want 2", code)
	}
}

var usesLine = regexp.MustCompile(`^\s*(?:-\s+)?uses:\s*(\S+)(.*)$`)
var pinned = regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40}$`)
var versionComment = regexp.MustCompile(`^\s+# v[0-9]+\.[0-9]+\.[0-9]+\s*$`)

// Our own workflows pin every action by its full commit SHA with the version
// in a comment, and grant contents: read at the top: a job that needs more
// says so itself.
func TestOwnWorkflowsPinned(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, ".github/workflows/*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflows: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for i, l := range strings.Split(string(data), "\n") {
			m := usesLine.FindStringSubmatch(l)
			if m == nil || strings.HasPrefix(m[1], "./") {
				continue
			}
			if !pinned.MatchString(m[1]) || !versionComment.MatchString(m[2]) {
				t.Errorf("%s:%d: %s: pin by the full commit SHA with `# vX.Y.Z` after it", rel, i+1, strings.TrimSpace(l))
			}
		}
		w := loadYAML(t, filepath.ToSlash(rel))
		if p := obj(w["permissions"]); len(p) != 1 || str(p["contents"]) != "read" {
			t.Errorf("%s: workflow permissions %v, want contents: read only", rel, p)
		}
	}
}
