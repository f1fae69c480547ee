package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/spf13/cobra"
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

// TestSourceMirrorFlags: --source-mirror (repeatable) and publish.yaml
// sourceMirrors reach the registry options of run; the flag wins.
func TestSourceMirrorFlags(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "packages"), 0o755)
	cfg := filepath.Join(dir, "publish.yaml")
	os.WriteFile(cfg, []byte(`apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
sourceMirrors:
- from: quay.io/acme
  to: central.corp:5000/quay/acme
`), 0o644)
	mirrors := func(args ...string) []registry.SourceMirror {
		t.Helper()
		inv := newInvocation(nil)
		var pr publishFlags
		cmd := &cobra.Command{Use: "run"}
		pr.register(cmd, true)
		pr.src.registerMirrors(cmd.Flags())
		if err := cmd.Flags().Parse(append([]string{"--source", dir, "--config", cfg, "--dst-registry", "r.example.com", "--catalog", "https://git.example.com/c.git"}, args...)); err != nil {
			t.Fatal(err)
		}
		if _, err := inv.applyEnv(cmd.Flags()); err != nil {
			t.Fatal(err)
		}
		o := &pipeline.Options{}
		if err := pr.options(inv, o, false); err != nil {
			t.Fatal(err)
		}
		return o.Mirror.SourceMirrors
	}
	if got := mirrors(); len(got) != 1 || got[0] != (registry.SourceMirror{From: "quay.io/acme", To: "central.corp:5000/quay/acme"}) {
		t.Errorf("from publish.yaml: %+v", got)
	}
	got := mirrors("--source-mirror", "quay.io=central.corp:5000/quay", "--source-mirror", "ghcr.io/x=central.corp:5000/ghcr/x")
	if len(got) != 2 || got[0].From != "quay.io" || got[1].To != "central.corp:5000/ghcr/x" {
		t.Errorf("from the flags: %+v", got)
	}
}
