package ci

import (
	"os"
	"strings"
)

// Input is one input of the GitHub Action (action.yml).
type Input struct {
	// Name of the input; for every input but "command" also the name of the
	// flag it sets.
	Name string
	// Flag is the flag the input sets; "" for "command", which action.yml
	// passes as the container's argument.
	Flag string
	// Command is the only command that has the flag ("plan",
	// "merge-shards"), "" when `publish run` has it.
	Command string
	// Secret inputs are masked before anything is printed.
	Secret bool
	// List inputs take one value per line or comma-separated values.
	List bool
}

// InputCommand is the input that selects the command (run, plan).
const InputCommand = "command"

var inputs = []Input{
	{Name: InputCommand},
	{Name: "source", Flag: "source"},
	{Name: "packages-dir", Flag: "packages-dir"},
	{Name: "catalog", Flag: "catalog"},
	{Name: "catalog-branch", Flag: "catalog-branch"},
	{Name: "catalog-username", Flag: "catalog-username"},
	{Name: "catalog-password", Flag: "catalog-password", Secret: true},
	{Name: "catalog-path", Flag: "catalog-path"},
	{Name: "catalog-ssh-key", Flag: "catalog-ssh-key"},
	{Name: "catalog-ssh-key-password", Flag: "catalog-ssh-key-password", Secret: true},
	{Name: "catalog-known-hosts", Flag: "catalog-known-hosts"},
	{Name: "insecure-ignore-host-key", Flag: "insecure-ignore-host-key"},
	{Name: "create-branch", Flag: "create-branch"},
	{Name: "init-catalog", Flag: "init-catalog"},
	{Name: "commit-author-name", Flag: "commit-author-name"},
	{Name: "commit-author-email", Flag: "commit-author-email"},
	{Name: "commit-committer-name", Flag: "commit-committer-name"},
	{Name: "commit-committer-email", Flag: "commit-committer-email"},
	{Name: "commit-message-template", Flag: "commit-message-template"},
	{Name: "signing-key", Flag: "signing-key"},
	{Name: "signing-key-password", Flag: "signing-key-password", Secret: true},
	{Name: "cluster", Flag: "cluster"},
	{Name: "clusters", Flag: "clusters"},
	{Name: "dst-registry", Flag: "dst-registry"},
	{Name: "plain-http", Flag: "plain-http"},
	{Name: "src-registry", Flag: "src-registry", List: true},
	{Name: "src-username", Flag: "src-username"},
	{Name: "src-password", Flag: "src-password", Secret: true},
	{Name: "dst-username", Flag: "dst-username"},
	{Name: "dst-password", Flag: "dst-password", Secret: true},
	{Name: "ca-file", Flag: "ca-file"},
	{Name: "namespace", Flag: "namespace"},
	{Name: "library", Flag: "library"},
	{Name: "image-pull-secret", Flag: "image-pull-secret", List: true},
	{Name: "concurrency", Flag: "concurrency"},
	{Name: "insecure", Flag: "insecure"},
	{Name: "plain-http-registry", Flag: "plain-http-registry", List: true},
	{Name: "signatures", Flag: "signatures"},
	{Name: "allow-nondistributable", Flag: "allow-nondistributable"},
	{Name: "retries", Flag: "retries"},
	{Name: "request-timeout", Flag: "request-timeout"},
	{Name: "allow-empty", Flag: "allow-empty"},
	{Name: "allow-dirty", Flag: "allow-dirty"},
	{Name: "base", Flag: "base"},
	{Name: "no-fetch", Flag: "no-fetch"},
	{Name: "config", Flag: "config"},
	{Name: "target", Flag: "target"},
	{Name: "oci", Flag: "oci"},
	{Name: "no-oci", Flag: "no-oci"},
	{Name: "cosign-key", Flag: "cosign-key"},
	{Name: "cosign-key-password", Flag: "cosign-key-password", Secret: true},
	{Name: "cosign-sig-tag", Flag: "cosign-sig-tag"},
	{Name: "delivery", Flag: "delivery"},
	{Name: "pr-label", Flag: "pr-label", List: true},
	{Name: "auto-merge", Flag: "auto-merge"},
	{Name: "plan-dir", Flag: "plan-dir"},
	{Name: "forge", Flag: "forge"},
	{Name: "forge-api-url", Flag: "forge-api-url"},
	{Name: "forge-repo", Flag: "forge-repo"},
	{Name: "forge-token", Flag: "forge-token", Secret: true},
	{Name: "chart-repo-username", Flag: "chart-repo-username"},
	{Name: "chart-repo-password", Flag: "chart-repo-password", Secret: true},
	{Name: "chart-repo-token", Flag: "chart-repo-token", Secret: true},
	{Name: "log-format", Flag: "log-format"},
	{Name: "quiet", Flag: "quiet"},
	{Name: "verbose", Flag: "verbose"},
	{Name: "target-branch", Flag: "target-branch", Command: "plan"},
	{Name: "plan-json", Flag: "plan-json", Command: "plan"},
	{Name: "report", Flag: "report"},
	{Name: "source-mirror", Flag: "source-mirror", List: true},
	{Name: "lint-cache", Flag: "lint-cache"},
	{Name: "shard", Flag: "shard"},
	{Name: "shard-result", Flag: "shard-result"},
	{Name: "matrix", Flag: "matrix", Command: "plan"},
	{Name: "matrix-format", Flag: "matrix-format", Command: "plan"},
	{Name: "shard-results", Flag: "shard-results", Command: "merge-shards"},
	{Name: "key", Flag: "key", Command: "merge-shards"},
}

// Inputs returns the inputs of the GitHub Action (action.yml).
func Inputs() []Input {
	out := make([]Input, len(inputs))
	copy(out, inputs)
	return out
}

// InputEnv is the environment variable the runner sets for an input of a
// Docker action: INPUT_ and the name upper-cased with spaces as '_'. Hyphens
// stay: dst-registry is INPUT_DST-REGISTRY (not a shell name, but a valid
// environment variable; os.Getenv reads it).
func InputEnv(name string) string {
	return "INPUT_" + strings.ToUpper(strings.ReplaceAll(name, " ", "_"))
}

// inputValue reads an input: INPUT_DST-REGISTRY as the runner sets it, then
// INPUT_DST_REGISTRY (runners and tools that follow a shell-safe spelling, or
// a user's own env:). Surrounding space is trimmed, as @actions/core does.
func inputValue(getenv func(string) string, name string) string {
	v := strings.TrimSpace(getenv(InputEnv(name)))
	if v == "" && strings.Contains(name, "-") {
		v = strings.TrimSpace(getenv(InputEnv(strings.ReplaceAll(name, "-", "_"))))
	}
	return v
}

// FlagEnv returns the GitHub Action's inputs as flag name -> value, only the
// inputs given (non-empty), only in GitHub Actions (GITHUB_ACTIONS=true):
// elsewhere INPUT_* variables are not ours. getenv nil is os.Getenv. List
// inputs come back comma-separated, as a string slice flag's Set takes them.
// The CLI applies them below the environment: a flag given on the command
// line wins, then PUBLISH_<FLAG>, then the input, then the default.
// "command" is not a flag and is not returned.
func FlagEnv(getenv func(string) string) map[string]string {
	if getenv == nil {
		getenv = os.Getenv
	}
	out := map[string]string{}
	if getenv("GITHUB_ACTIONS") != "true" {
		return out
	}
	for _, in := range inputs {
		if in.Flag == "" {
			continue
		}
		v := inputValue(getenv, in.Name)
		if v == "" {
			continue
		}
		if in.List {
			v = joinList(v)
		}
		out[in.Flag] = v
	}
	return out
}

// joinList turns one value per line (a YAML block) into comma-separated
// values, dropping blanks.
func joinList(v string) string {
	var items []string
	for _, l := range strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == '\r' || r == ',' }) {
		if l = strings.TrimSpace(l); l != "" {
			items = append(items, l)
		}
	}
	return strings.Join(items, ",")
}

// Secrets returns the values of every secret input and of the PUBLISH_*
// variables of the secret flags (PUBLISH_DST_PASSWORD, ...) that are set:
// what Detect masks on GitHub. getenv nil is os.Getenv.
func Secrets(getenv func(string) string) []string {
	if getenv == nil {
		getenv = os.Getenv
	}
	var out []string
	seen := map[string]bool{}
	add := func(v string) {
		// The value as set, and trimmed as FlagEnv passes it on.
		for _, s := range []string{v, strings.TrimSpace(v)} {
			if s != "" && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	for _, in := range inputs {
		if !in.Secret {
			continue
		}
		add(getenv(InputEnv(in.Name)))
		add(getenv(InputEnv(strings.ReplaceAll(in.Name, "-", "_"))))
		add(getenv("PUBLISH_" + strings.ToUpper(strings.ReplaceAll(in.Flag, "-", "_"))))
	}
	return out
}
