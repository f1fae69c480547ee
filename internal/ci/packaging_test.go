package ci

// Tests of the packaging: action.yml, Dockerfile, .dockerignore and the CI
// examples, against the real `publish` binary's flags. There is no Docker
// engine here: the image is checked by reading the Dockerfile, not built.

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/testenv"
)

const root = "../.."

// loadYAML parses a YAML file into generic JSON values. sigs.k8s.io/yaml
// reads YAML 1.1: a bare `on:` key comes back as "true".
func loadYAML(t *testing.T, rel string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return m
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }
func list(v any) []any         { l, _ := v.([]any); return l }
func str(v any) string         { s, _ := v.(string); return s }

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
	buildOut  []byte
)

// publishBinary builds cmd/publish once per test binary; not with -short.
func publishBinary(t *testing.T) string {
	t.Helper()
	testenv.Short(t, "builds cmd/publish")
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Skip(t, "no go command in PATH: cannot build cmd/publish")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "publish-ci-test")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "publish")
		cmd := exec.Command(goBin, "build", "-o", binary, "./cmd/publish")
		cmd.Dir = root
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/publish: %v\n%s", buildErr, buildOut)
	}
	return binary
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

var helpFlag = regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9-]+)`)

// commandFlags runs `publish <command> --help` and returns its flags, or nil
// when the command does not exist (yet).
func commandFlags(t *testing.T, command string) map[string]bool {
	t.Helper()
	out, err := exec.Command(publishBinary(t), command, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "publish "+command) {
		return nil
	}
	flags := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if m := helpFlag.FindStringSubmatch(sc.Text()); m != nil {
			flags[m[1]] = true
		}
	}
	return flags
}

func TestActionYAML(t *testing.T) {
	a := loadYAML(t, "action.yml")
	runs := obj(a["runs"])
	// The published image of this version, not the Dockerfile: the runner
	// pulls it instead of building publish on every workflow run.
	if str(runs["using"]) != "docker" || str(runs["image"]) != ActionImage() {
		t.Errorf("runs: %v, want using docker, image %s (internal/ci ReleaseVersion)", runs, ActionImage())
	}
	if !regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(ReleaseVersion) {
		t.Errorf("ReleaseVersion %q is not a release tag vX.Y.Z", ReleaseVersion)
	}
	if args := list(runs["args"]); len(args) != 1 || str(args[0]) != "${{ inputs.command }}" {
		t.Errorf("runs.args = %v, want [${{ inputs.command }}]: every other input travels as INPUT_*", args)
	}
	if b := obj(a["branding"]); str(b["icon"]) == "" || str(b["color"]) == "" {
		t.Errorf("branding: %v", b)
	}
	if str(a["name"]) == "" || str(a["description"]) == "" {
		t.Error("name and description are required")
	}

	ins := obj(a["inputs"])
	var want []string
	for _, in := range Inputs() {
		want = append(want, in.Name)
	}
	if got := keys(ins); !slices.Equal(got, sortedCopy(want)) {
		t.Errorf("action.yml inputs %v\nci.Inputs()        %v", got, sortedCopy(want))
	}
	for name, v := range ins {
		in := obj(v)
		if str(in["description"]) == "" {
			t.Errorf("input %s: no description", name)
		}
		def, hasDefault := in["default"]
		switch {
		case name == InputCommand:
			if str(def) != "run" {
				t.Errorf("input command: default %v, want run", def)
			}
		case hasDefault:
			// The runner passes defaults as INPUT_*: they would shadow
			// publish's own defaults and drift from them.
			t.Errorf("input %s declares a default (%v): leave defaults to publish", name, def)
		}
		if r, _ := in["required"].(bool); r {
			t.Errorf("input %s is required: publish checks what each command needs", name)
		}
	}
	outs := obj(a["outputs"])
	if got, want := keys(outs), sortedCopy([]string{OutputChanged, OutputArtifacts, OutputCommit, OutputPlanJSON, OutputClusters, OutputMatrix}); !slices.Equal(got, want) {
		t.Errorf("outputs %v, want %v", got, want)
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

// Every input sets a real flag, and every flag of `publish run` has an input.
func TestInputsAreFlags(t *testing.T) {
	run := commandFlags(t, "run")
	if run == nil {
		t.Fatal("publish run --help failed")
	}
	plan := commandFlags(t, "plan")
	merge := commandFlags(t, "merge-shards")
	for _, in := range Inputs() {
		if in.Flag == "" {
			continue
		}
		if in.Flag != in.Name {
			t.Errorf("input %s sets --%s: keep input and flag names equal", in.Name, in.Flag)
		}
		switch in.Command {
		case "":
			if !run[in.Flag] {
				t.Errorf("input %s: `publish run` has no --%s", in.Name, in.Flag)
			}
		case "plan":
			if plan == nil {
				t.Logf("input %s: no `publish plan` in this build yet", in.Name)
			} else if !plan[in.Flag] {
				t.Errorf("input %s: `publish plan` has no --%s", in.Name, in.Flag)
			}
		case "merge-shards":
			if !merge[in.Flag] {
				t.Errorf("input %s: `publish merge-shards` has no --%s", in.Name, in.Flag)
			}
		default:
			t.Errorf("input %s: unknown command %q", in.Name, in.Command)
		}
		if want := strings.HasSuffix(in.Flag, "-password") || strings.HasSuffix(in.Flag, "-token"); in.Secret != want {
			t.Errorf("input %s: secret %v, want %v", in.Name, in.Secret, want)
		}
	}
	have := map[string]bool{}
	for _, in := range Inputs() {
		have[in.Flag] = true
	}
	for _, cmd := range []map[string]bool{run, plan, merge} {
		for f := range cmd {
			if !have[f] && !noInput[f] {
				t.Errorf("flag --%s has no action input: add it to ci.Inputs and action.yml", f)
			}
		}
	}
}

// noInput are flags without an action input: help, and aliases.
var noInput = map[string]bool{"help": true, "plain": true}

func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var from, user []string
	var entry string
	var buildLine string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch f := strings.Fields(l); {
		case len(f) == 0 || strings.HasPrefix(l, "#"):
		case strings.EqualFold(f[0], "FROM"):
			from = append(from, l)
		case strings.EqualFold(f[0], "USER"):
			user = append(user, l)
		case strings.EqualFold(f[0], "ENTRYPOINT"):
			entry = strings.TrimSpace(l[len("ENTRYPOINT"):])
		case strings.Contains(l, "go build"):
			buildLine = l
		}
	}
	if len(from) != 2 || !strings.HasPrefix(from[0], "FROM golang:1.26") || !strings.Contains(from[0], " AS ") {
		t.Errorf("stages: %v, want a golang:1.26 builder and a final image", from)
	}
	if len(user) != 0 {
		t.Errorf("%v: GitHub requires Docker actions to run as root", user)
	}
	if entry != `["/usr/local/bin/publish"]` {
		t.Errorf("ENTRYPOINT %s", entry)
	}
	for _, s := range []string{"CGO_ENABLED=0", "-trimpath", "-s -w", "-X main.version=", "./cmd/publish"} {
		if !strings.Contains(buildLine, s) {
			t.Errorf("go build line lacks %s: %s", s, buildLine)
		}
	}
	for _, pkg := range []string{"ca-certificates", "git"} {
		if !regexp.MustCompile(`install [^\n]*\b` + pkg + `\b`).Match(data) {
			t.Errorf("final image does not install %s", pkg)
		}
	}
	// -X main.version= must name a real variable.
	src, err := os.ReadFile(filepath.Join(root, "cmd/publish/version.go"))
	if err != nil || !regexp.MustCompile(`(?m)^var version = `).Match(src) {
		t.Errorf("cmd/publish has no `var version`: -X main.version does nothing (%v)", err)
	}
}

// .dockerignore keeps every file the build reads: the Go files and embedded
// files of cmd/publish and its packages, go.mod and go.sum.
func TestDockerignore(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Skip(t, "no go command")
	}
	data, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "!") {
			t.Fatalf(".dockerignore exception %q: extend this test", l)
		}
		patterns = append(patterns, strings.TrimPrefix(filepath.Clean(l), "/"))
	}
	cmd := exec.Command(goBin, "list", "-deps", "-f", `{{if .Module}}{{if .Module.Main}}{{.Dir}}|{{join .GoFiles " "}}|{{join .EmbedFiles " "}}{{end}}{{end}}`, "./cmd/publish")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	abs, _ := filepath.Abs(root)
	need := []string{"go.mod", "go.sum"}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(l, "|")
		if len(parts) != 3 {
			continue
		}
		rel, _ := filepath.Rel(abs, parts[0])
		for _, f := range append(strings.Fields(parts[1]), strings.Fields(parts[2])...) {
			need = append(need, filepath.ToSlash(filepath.Join(rel, f)))
		}
	}
	if len(need) < 10 {
		t.Fatalf("go list found only %v", need)
	}
	for _, p := range need {
		if pat := ignoredBy(patterns, p); pat != "" {
			t.Errorf(".dockerignore %q leaves out %s, which the build needs", pat, p)
		}
	}
}

// ignoredBy returns the pattern that excludes p (or a parent of p), as
// Docker matches .dockerignore: filepath.Match, with ** for any directories.
func ignoredBy(patterns []string, p string) string {
	parts := strings.Split(p, "/")
	for i := 1; i <= len(parts); i++ {
		prefix := strings.Join(parts[:i], "/")
		for _, pat := range patterns {
			if ok, _ := filepath.Match(pat, prefix); ok {
				return pat
			}
			if rest, ok := strings.CutPrefix(pat, "**/"); ok {
				for j := 0; j < i; j++ {
					if ok, _ := filepath.Match(rest, strings.Join(parts[j:i], "/")); ok {
						return pat
					}
				}
			}
		}
	}
	return ""
}

// publishEnv checks that every PUBLISH_* variable an example sets is a flag's
// (of run or plan) or one of this package's.
func publishEnv(t *testing.T, where string, names []string) {
	t.Helper()
	flags := map[string]bool{}
	for _, in := range Inputs() {
		if in.Flag != "" {
			flags["PUBLISH_"+strings.ToUpper(strings.ReplaceAll(in.Flag, "-", "_"))] = true
		}
	}
	for _, e := range []string{EnvCI, EnvReportDir, EnvCodeQuality, EnvDotenv, EnvTektonResultsDir} {
		flags[e] = true
	}
	for _, n := range names {
		if strings.HasPrefix(n, "PUBLISH_") && !flags[n] {
			t.Errorf("%s: %s is neither a flag's variable nor internal/ci's", where, n)
		}
	}
}

func TestGitHubWorkflowExample(t *testing.T) {
	w := loadYAML(t, "examples/github/publish.yml")
	on := obj(w["on"])
	if on == nil {
		on = obj(w["true"]) // YAML 1.1: on is a boolean
	}
	if br := list(obj(on["push"])["branches"]); len(br) != 1 || str(br[0]) != "main" {
		t.Errorf("on.push.branches = %v, want [main]", br)
	}
	if _, ok := on["pull_request"]; !ok {
		t.Error("no pull_request trigger")
	}
	if p := obj(w["permissions"]); len(p) != 1 || str(p["contents"]) != "read" {
		t.Errorf("workflow permissions %v, want contents: read only", p)
	}
	inputs := map[string]bool{}
	for _, in := range Inputs() {
		inputs[in.Name] = true
	}
	commands := map[string]string{} // job -> command
	for name, j := range obj(w["jobs"]) {
		job := obj(j)
		if p := obj(job["permissions"]); p != nil && (len(p) != 1 || str(p["contents"]) != "read") {
			t.Errorf("job %s permissions %v, want contents: read only", name, p)
		}
		checkout := false
		for _, s := range list(job["steps"]) {
			step := obj(s)
			uses := str(step["uses"])
			with := obj(step["with"])
			switch {
			case strings.HasPrefix(uses, "actions/checkout@"):
				checkout = true
				if d, _ := with["fetch-depth"].(float64); d != 0 || with["fetch-depth"] == nil {
					t.Errorf("job %s: checkout fetch-depth %v, want 0", name, with["fetch-depth"])
				}
			case uses == "operator-publish/publish@v1":
				commands[name] = str(with["command"])
				for k, v := range with {
					if !inputs[k] {
						t.Errorf("job %s: with.%s is not an input of action.yml", name, k)
					}
					for _, in := range Inputs() {
						if in.Name == k && in.Secret && !strings.HasPrefix(str(v), "${{ secrets.") {
							t.Errorf("job %s: secret input %s not from secrets: %v", name, k, v)
						}
					}
				}
			case strings.HasPrefix(uses, "operator-publish/"):
				t.Errorf("job %s uses %s, want operator-publish/publish@v1", name, uses)
			}
		}
		if !checkout {
			t.Errorf("job %s: no actions/checkout", name)
		}
	}
	if commands["plan"] != "plan" || commands["publish"] != "run" {
		t.Errorf("commands by job: %v, want plan: plan, publish: run", commands)
	}
	jobs := obj(w["jobs"])
	if !strings.Contains(str(obj(jobs["plan"])["if"]), "pull_request") || !strings.Contains(str(obj(jobs["publish"])["if"]), "push") {
		t.Error("plan must run on pull_request and publish on push")
	}
}

func TestGitLabExample(t *testing.T) {
	g := loadYAML(t, "examples/gitlab-ci.yml")
	vars := obj(g["variables"])
	if d, ok := vars["GIT_DEPTH"].(float64); !ok || d != 0 {
		t.Errorf("GIT_DEPTH = %v, want 0", vars["GIT_DEPTH"])
	}
	var names []string
	names = append(names, keys(vars)...)
	tmpl := obj(g[".publish"])
	img := obj(tmpl["image"])
	if ep := list(img["entrypoint"]); len(ep) != 1 || str(ep[0]) != "" || str(img["name"]) == "" {
		t.Errorf(".publish image %v, want a name and entrypoint [\"\"]", img)
	}
	scripts := map[string]string{}
	for _, job := range []string{"publish", "plan"} {
		j := obj(g[job])
		if str(j["extends"]) != ".publish" {
			t.Errorf("job %s does not extend .publish", job)
		}
		for _, s := range list(j["script"]) {
			scripts[job] += str(s) + "\n"
		}
		names = append(names, keys(obj(j["variables"]))...)
	}
	if !strings.Contains(scripts["publish"], "publish run") || !strings.Contains(scripts["plan"], "publish plan") {
		t.Errorf("scripts %v", scripts)
	}
	rule := func(job string) string { return str(obj(list(obj(g[job])["rules"])[0])["if"]) }
	if !strings.Contains(rule("publish"), "$CI_DEFAULT_BRANCH") || !strings.Contains(rule("plan"), "merge_request_event") {
		t.Errorf("rules: publish %q, plan %q", rule("publish"), rule("plan"))
	}
	plan := obj(g["plan"])
	cq := str(obj(plan["variables"])[EnvCodeQuality])
	if cq == "" {
		cq = DefaultCodeQuality
	}
	if got := str(obj(obj(plan["artifacts"])["reports"])["codequality"]); got != cq {
		t.Errorf("plan artifacts:reports:codequality %q, publish writes %q", got, cq)
	}
	if str(obj(plan["artifacts"])["when"]) != "always" {
		t.Error("plan artifacts must be kept when plan fails (findings)")
	}
	publishEnv(t, "examples/gitlab-ci.yml", names)
}

// TestGitLabShardsExample: the split example runs `parallel:` parts that
// take their part from GitLab's variables and keep their results whatever
// the outcome, and one merge job that runs after them even when one
// failed, with their artifacts, one at a time.
func TestGitLabShardsExample(t *testing.T) {
	g := loadYAML(t, "examples/gitlab-ci-shards.yml")
	shard, merge := obj(g["publish-shard"]), obj(g["publish-merge"])
	if n, ok := shard["parallel"].(float64); !ok || n < 2 || n > 200 {
		t.Errorf("publish-shard parallel %v, want 2 to 200", shard["parallel"])
	}
	script := func(j map[string]any) string {
		var s string
		for _, l := range list(j["script"]) {
			s += str(l) + "\n"
		}
		return s
	}
	if s := script(shard); !strings.Contains(s, "publish run --shard-result shard-results") || strings.Contains(s, "--shard ") {
		t.Errorf("publish-shard script %q: the part comes from CI_NODE_INDEX/CI_NODE_TOTAL", s)
	}
	if str(obj(shard["artifacts"])["when"]) != "always" {
		t.Error("publish-shard must keep its result when it fails")
	}
	if !strings.Contains(script(merge), "publish merge-shards --shard-results shard-results") || str(merge["when"]) != "always" || str(merge["resource_group"]) == "" {
		t.Errorf("publish-merge %v", merge)
	}
	if needs := list(merge["needs"]); len(needs) != 1 || str(obj(needs[0])["job"]) != "publish-shard" || obj(needs[0])["artifacts"] != true {
		t.Errorf("publish-merge needs %v", merge["needs"])
	}
	publishEnv(t, "examples/gitlab-ci-shards.yml", keys(obj(g["variables"])))
}

var tektonRef = regexp.MustCompile(`\$\((params|workspaces|results)\.([a-z0-9-]+)[.)]`)

func TestTektonExample(t *testing.T) {
	task := loadYAML(t, "examples/tekton/task.yaml")
	if str(task["apiVersion"]) != "tekton.dev/v1" || str(task["kind"]) != "Task" {
		t.Fatalf("%v %v, want tekton.dev/v1 Task", task["apiVersion"], task["kind"])
	}
	spec := obj(task["spec"])
	declared := map[string]map[string]bool{"params": {}, "workspaces": {}, "results": {}}
	for kind := range declared {
		for _, v := range list(spec[kind]) {
			declared[kind][str(obj(v)["name"])] = true
		}
	}
	outputs := map[string]bool{OutputChanged: true, OutputArtifacts: true, OutputCommit: true, OutputPlanJSON: true, OutputClusters: true}
	for r := range declared["results"] {
		if !outputs[r] {
			t.Errorf("result %s is not an output publish sets", r)
		}
	}
	for _, r := range []string{OutputChanged, OutputArtifacts, OutputCommit, OutputClusters} {
		if !declared["results"][r] {
			t.Errorf("no result %s", r)
		}
	}
	if !declared["workspaces"]["source"] {
		t.Error("no source workspace")
	}
	raw, _ := json.Marshal(spec["steps"])
	for _, m := range tektonRef.FindAllStringSubmatch(string(raw), -1) {
		if !declared[m[1]][m[2]] {
			t.Errorf("$(%s.%s) is not declared", m[1], m[2])
		}
	}
	steps := list(spec["steps"])
	if len(steps) != 1 {
		t.Fatalf("%d steps, want 1", len(steps))
	}
	step := obj(steps[0])
	if c := list(step["command"]); len(c) != 1 || str(c[0]) != "/usr/local/bin/publish" {
		t.Errorf("command %v", c)
	}
	var names []string
	secrets := map[string]bool{}
	for _, e := range list(step["env"]) {
		env := obj(e)
		n := str(env["name"])
		names = append(names, n)
		if obj(obj(env["valueFrom"])["secretKeyRef"]) != nil {
			secrets[n] = true
		}
		if n == EnvTektonResultsDir && str(env["value"]) != DefaultTektonResults {
			t.Errorf("%s = %v", n, env["value"])
		}
	}
	for _, in := range Inputs() {
		if in.Secret && in.Name != "src-password" {
			n := "PUBLISH_" + strings.ToUpper(strings.ReplaceAll(in.Flag, "-", "_"))
			if !secrets[n] {
				t.Errorf("%s does not come from a Secret (valueFrom.secretKeyRef)", n)
			}
		}
	}
	publishEnv(t, "examples/tekton/task.yaml", names)
}
