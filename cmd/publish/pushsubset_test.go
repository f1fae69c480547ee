package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPushSubsetFlags: push --only takes names repeated or comma-separated;
// push --cluster C with publish.yaml takes clusters.C's include and exclude
// as the push's selection, with --catalog or without.
func TestPushSubsetFlags(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "publish.yaml")
	os.WriteFile(cfg, []byte(`apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
clusters:
  edge:
    include: [hello-*]
    exclude: [hello-old]
`), 0o644)
	parse := func(args ...string) *pushCmd {
		t.Helper()
		inv := newInvocation(nil)
		p := &pushCmd{}
		fs := p.command(inv).Flags()
		if err := fs.Parse(append([]string{"--config", cfg, "--dst-registry", "r.example.com"}, args...)); err != nil {
			t.Fatal(err)
		}
		if _, err := inv.applyEnv(fs); err != nil {
			t.Fatal(err)
		}
		if err := p.options(inv, "x.tgz"); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := parse("--only", "a,b", "--only", "c"); !slices.Equal(p.o.Only, []string{"a", "b", "c"}) || p.o.Selection.Name != "" {
		t.Errorf("--only: %q, selection %+v", p.o.Only, p.o.Selection)
	}
	for _, extra := range [][]string{nil, {"--catalog", "https://git.example.com/c.git"}} {
		p := parse(append([]string{"--cluster", "edge"}, extra...)...)
		s := p.o.Selection
		if s.Name != "edge" || !slices.Equal(s.Include, []string{"hello-*"}) || !slices.Equal(s.Exclude, []string{"hello-old"}) {
			t.Errorf("--cluster edge %v: selection %+v", extra, s)
		}
	}
}
