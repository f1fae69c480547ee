package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/config"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestHelpMatchesBinary: the help of every command says what the binary
// does: the state is publish/state/ (publish/state.yaml is only the older
// layout a catalog may still have, which no help names), and package,
// which only reads a catalog, offers no flag that makes or seeds one.
func TestHelpMatchesBinary(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		text := c.Short + "\n" + c.Long + "\n" + c.Example
		c.Flags().VisitAll(func(f *pflag.Flag) { text += "\n" + f.Usage })
		if strings.Contains(text, "publish/state.yaml") {
			t.Errorf("publish %s: help names publish/state.yaml", c.Name())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	root := newRootCmd()
	walk(root)
	pkg, _, err := root.Find([]string{"package"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"init-catalog", "create-branch"} {
		if pkg.Flags().Lookup(f) != nil {
			t.Errorf("publish package has --%s: it only reads the catalog", f)
		}
	}
}

// TestCredentialVarsAreTheSecretFlags: the variables publish.yaml's
// errors send a credential to (config.CredentialVars) are those of the
// flags marked secret, no more and no fewer.
func TestCredentialVarsAreTheSecretFlags(t *testing.T) {
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if isSecret(f) && f.Annotations[annSecret][0] == "true" && len(f.Annotations[annAliasOf]) == 0 {
				seen[envName(f.Name)] = true
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
	for v := range seen {
		if !slices.Contains(config.CredentialVars, v) {
			t.Errorf("%s is a secret flag's variable but not in config.CredentialVars", v)
		}
	}
	for _, v := range config.CredentialVars {
		if !seen[v] && !strings.HasSuffix(v, "_USERNAME") {
			t.Errorf("config.CredentialVars has %s, which no secret flag reads", v)
		}
	}
}

// TestConfigurationTableMatchesFlags: every flag the flag table of
// docs/configuration.md names is a flag of the binary, with the default
// the table gives when it is a literal (a number, true or false).
func TestConfigurationTableMatchesFlags(t *testing.T) {
	data, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]*pflag.Flag{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if g := flags[f.Name]; g != nil && g.Usage != f.Usage && f.Name == "concurrency" {
				t.Errorf("publish %s --%s: %q, elsewhere %q", c.Name(), f.Name, f.Usage, g.Usage)
			}
			flags[f.Name] = f
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
	flagRE := regexp.MustCompile("`--([a-z0-9-]+)")
	literal := regexp.MustCompile(`^([0-9]+|true|false)$`)
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		cells := strings.Split(line, " | ")
		if len(cells) < 3 {
			continue
		}
		for _, m := range flagRE.FindAllStringSubmatch(cells[0], -1) {
			n++
			f := flags[m[1]]
			if f == nil {
				t.Errorf("docs/configuration.md names --%s, which no command has", m[1])
				continue
			}
			if def := strings.TrimSpace(cells[1]); literal.MatchString(def) && def != f.DefValue {
				t.Errorf("docs/configuration.md: --%s defaults to %s, the binary to %s", m[1], def, f.DefValue)
			}
		}
	}
	if n < 20 {
		t.Fatalf("read %d flags from docs/configuration.md's table: the table moved?", n)
	}
	// --concurrency has one meaning, on every command that has it, and
	// the table says it.
	if c := flags["concurrency"]; c == nil || !strings.Contains(c.Usage, "registry operations in flight") || !strings.Contains(string(data), "| `--concurrency N` | 4 | registry operations in flight") {
		t.Errorf("--concurrency: the help and docs/configuration.md disagree on what it bounds")
	}
}
