package shard

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Matrix formats: what `publish plan --matrix N --matrix-format F` prints
// for the CI system that fans the parts out.
const (
	// FormatGitHub is the object GitHub Actions' fromJSON gives
	// strategy.matrix: {"shard":["1/3","2/3","3/3"]}; at most 256 jobs
	// per matrix (docs.github.com, "Running variations of jobs in a
	// workflow").
	FormatGitHub = "github"
	// FormatTekton is the matrix params of a Tekton PipelineTask:
	// [{"name":"shard","value":["1/3",…]}]; at most 256 combinations
	// (Tekton's default max-matrix-combinations-count).
	FormatTekton = "tekton"
	// FormatArgo is the JSON list an Argo Workflows step's withParam
	// takes: ["1/3","2/3","3/3"].
	FormatArgo = "argo"
	// FormatGitLab is the number of parts for a GitLab job's
	// `parallel:` keyword, which takes 1 to 200 (docs.gitlab.com, CI/CD
	// YAML syntax reference).
	FormatGitLab = "gitlab"
)

// Limits are the most jobs each CI system runs from one matrix.
var Limits = map[string]int{FormatGitHub: 256, FormatTekton: 256, FormatArgo: MaxTotal, FormatGitLab: 200}

// MatrixParts is how many parts to ask for: want, capped at format's limit
// and at the number of destination repositories (repos; a part beyond
// them would have nothing to copy; 0: not known, no cap), and at least 1.
// The error names the format when it is none of the Format constants.
func MatrixParts(want, repos int, format string) (int, error) {
	limit, ok := Limits[format]
	if !ok {
		return 0, fmt.Errorf("--matrix-format %q: write github, tekton, argo or gitlab", format)
	}
	n := min(max(want, 1), limit)
	if repos > 0 {
		n = min(n, repos)
	}
	return n, nil
}

// Matrix returns the JSON of n parts in format (MatrixParts decides n):
// one line, no trailing newline.
func Matrix(n int, format string) (string, error) {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = Shard{Index: i + 1, Total: n}.String()
	}
	var v any
	switch format {
	case FormatGitHub:
		v = map[string][]string{"shard": parts}
	case FormatTekton:
		v = []map[string]any{{"name": "shard", "value": parts}}
	case FormatArgo:
		v = parts
	case FormatGitLab:
		v = n
	default:
		return "", fmt.Errorf("--matrix-format %q: write github, tekton, argo or gitlab", format)
	}
	data, err := json.Marshal(v)
	return strings.TrimSpace(string(data)), err
}
