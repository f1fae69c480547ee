package main

import (
	"strings"
	"testing"

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
