package ci

import (
	"io/fs"
	"strings"
	"testing"

	publish "github.com/operator-publish/publish"
)

// The catalog repo's own CI examples (`publish check`) in
// catalog-repo-template/: checked like the package repo's examples, against
// action.yml and the real binary's flags. They start with a dot, so the
// template built into the binary does not carry them: a seeded catalog does
// not start running a workflow nobody asked for.

func TestCatalogCheckGitHubWorkflow(t *testing.T) {
	const rel = "catalog-repo-template/.github/workflows/publish-check.yml"
	w := loadYAML(t, rel)
	on := obj(w["on"])
	if on == nil {
		on = obj(w["true"]) // YAML 1.1: on is a boolean
	}
	if _, ok := on["pull_request"]; !ok || len(on) != 1 {
		t.Errorf("%s: triggers %v, want pull_request only", rel, keys(on))
	}
	if p := obj(w["permissions"]); len(p) != 1 || str(p["contents"]) != "read" {
		t.Errorf("workflow permissions %v, want contents: read only", p)
	}
	inputs := map[string]bool{}
	for _, in := range Inputs() {
		inputs[in.Name] = true
	}
	flags := commandFlags(t, "check")
	if flags == nil {
		t.Fatal("publish check --help failed")
	}
	jobs := obj(w["jobs"])
	if len(jobs) != 1 {
		t.Fatalf("jobs %v, want one", keys(jobs))
	}
	job := obj(jobs["check"])
	if p := obj(job["permissions"]); len(p) != 1 || str(p["contents"]) != "read" {
		t.Errorf("job permissions %v, want contents: read only", p)
	}
	var checkout, check bool
	for _, s := range list(job["steps"]) {
		step := obj(s)
		uses, with := str(step["uses"]), obj(step["with"])
		switch {
		case strings.HasPrefix(uses, "actions/checkout@"):
			checkout = true
			if d, ok := with["fetch-depth"].(float64); !ok || d != 0 {
				t.Errorf("checkout fetch-depth %v, want 0 (the merge base)", with["fetch-depth"])
			}
		case uses == "operator-publish/publish@v1":
			check = str(with[InputCommand]) == "check"
			for k := range with {
				if !inputs[k] {
					t.Errorf("with.%s is not an input of action.yml", k)
				} else if k != InputCommand && !flags[k] {
					t.Errorf("with.%s: `publish check` has no --%s", k, k)
				}
			}
		}
	}
	if !checkout || !check {
		t.Errorf("steps: checkout %v, publish check %v", checkout, check)
	}
}

func TestCatalogCheckGitLabJob(t *testing.T) {
	const rel = "catalog-repo-template/.gitlab-ci.yml"
	g := loadYAML(t, rel)
	if d, ok := obj(g["variables"])["GIT_DEPTH"].(float64); !ok || d != 0 {
		t.Errorf("GIT_DEPTH = %v, want 0", obj(g["variables"])["GIT_DEPTH"])
	}
	job := obj(g["check"])
	img := obj(job["image"])
	if ep := list(img["entrypoint"]); len(ep) != 1 || str(ep[0]) != "" || str(img["name"]) == "" {
		t.Errorf("image %v, want a name and entrypoint [\"\"]", img)
	}
	var script string
	for _, s := range list(job["script"]) {
		script += str(s) + "\n"
	}
	if !strings.Contains(script, "publish check") {
		t.Errorf("script %q", script)
	}
	if rule := str(obj(list(job["rules"])[0])["if"]); !strings.Contains(rule, "merge_request_event") {
		t.Errorf("rule %q, want merge request pipelines", rule)
	}
	vars := obj(job["variables"])
	cq := str(vars[EnvCodeQuality])
	if cq == "" {
		cq = DefaultCodeQuality
	}
	if got := str(obj(obj(job["artifacts"])["reports"])["codequality"]); got != cq {
		t.Errorf("artifacts:reports:codequality %q, publish writes %q", got, cq)
	}
	if str(obj(job["artifacts"])["when"]) != "always" {
		t.Error("artifacts must be kept when check fails")
	}
	flags := commandFlags(t, "check")
	if flags == nil {
		t.Fatal("publish check --help failed")
	}
	own := map[string]bool{EnvCI: true, EnvReportDir: true, EnvCodeQuality: true, EnvDotenv: true}
	for n := range vars {
		flag := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(n, "PUBLISH_"), "_", "-"))
		if strings.HasPrefix(n, "PUBLISH_") && !own[n] && !flags[flag] {
			t.Errorf("%s: `publish check` has no --%s", n, flag)
		}
	}
}

func TestCatalogCheckExamplesNotSeeded(t *testing.T) {
	err := fs.WalkDir(publish.CatalogTemplate, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && (strings.Contains(p, ".github") || strings.HasSuffix(p, ".gitlab-ci.yml")) {
			t.Errorf("%s is built into the binary: a new catalog would run it", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
