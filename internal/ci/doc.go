// Package ci speaks the dialect of the CI system publish runs in: GitHub
// Actions, GitLab CI, Tekton, or none. docs/design.md#plan (PR mode) and
// docs/design.md#ci (one container works as a GitHub Action, a GitLab job
// and a Tekton step).
//
// Detect picks the system from the environment and returns an Env:
//
//	env := ci.Detect(nil, os.Stdout) // call first: it masks secrets on GitHub
//	env.Annotate(findings)           // findings at file:line
//	env.Summary(markdown)            // the job summary / report
//	env.SetOutput("changed", "true") // step outputs / task results
//	pr, target := env.PullRequest()  // PR/MR mode and its target branch
//
// Detection, first match wins:
//
//	PUBLISH_CI=github|gitlab|tekton|none  explicit choice
//	GITHUB_ACTIONS=true                   GitHub Actions
//	GITLAB_CI=true                        GitLab CI
//	PUBLISH_TEKTON_RESULTS_DIR set, or    Tekton (a TaskRun step; Tekton sets no
//	/tekton/results is a directory        environment variable of its own)
//	otherwise                             none
//
// What each system gets:
//
//	                 github                 gitlab                     tekton                        none
//	Mask             ::add-mask::           no-op (masked variables)   no-op                         no-op
//	SetOutput        $GITHUB_OUTPUT         $PUBLISH_DOTENV_REPORT     $PUBLISH_TEKTON_RESULTS_DIR   no-op
//	                                        (if set) as PUBLISH_       (default /tekton/results),
//	                                        OUTPUT_<NAME>=value        truncated to fit 4 KB
//	Summary          $GITHUB_STEP_SUMMARY   $PUBLISH_REPORT_DIR/       $PUBLISH_REPORT_DIR/          no-op
//	                                        summary.md (if set)        summary.md (if set)
//	Annotate         ::error/::warning      Code Quality report        plain lines                   plain lines
//	                 workflow commands      ($PUBLISH_CODEQUALITY_
//	                                        REPORT, default gl-code-
//	                                        quality-report.json) and
//	                                        plain lines
//	PullRequest      pull_request(_target)  CI_MERGE_REQUEST_IID       false                         false
//	                 + GITHUB_BASE_REF      + ..._TARGET_BRANCH_NAME
//
// Plain lines are `path:line:col: severity: message [rule]`.
//
// No method panics. go-githubactions panics when GITHUB_OUTPUT or
// GITHUB_STEP_SUMMARY is unset or unwritable, or when stdout cannot be
// written; every call into it is checked first and recovered last. A value
// that cannot be recorded is reported as a ::warning:: line, and SetOutput
// and Summary return an error only when a configured destination failed:
// callers should print it and carry on (the run's outcome does not depend on
// it).
//
// Action inputs: the runner passes each input of a Docker action as the
// environment variable INPUT_<NAME>, the name upper-cased with spaces (not
// hyphens) as '_': input dst-registry is INPUT_DST-REGISTRY. FlagEnv maps them
// to flag names; the CLI applies them below PUBLISH_* variables: flag >
// PUBLISH_* > action input > default.
package ci
