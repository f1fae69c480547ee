package main

import (
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
