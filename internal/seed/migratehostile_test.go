package seed

import (
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/render"
)

// legacyCatalog is a catalog of the layout before state per cluster in
// memory: publish/state.yaml recording clusters, the shared base
// publish/generated with artifact tiny, and files.
func legacyCatalog(t *testing.T, clusters []string, files render.Files) render.Files {
	t.Helper()
	var rendered strings.Builder
	for _, c := range clusters {
		rendered.WriteString("  " + c + ": sha256:" + strings.Repeat("a", 64) + "\n")
	}
	cat := render.Files{
		gitops.LegacyStatePath:                      []byte("apiVersion: " + gitops.LegacyStateAPIVersion + "\nkind: " + gitops.StateKind + "\nartifacts: []\nrendered:\n" + rendered.String()),
		"publish/generated/kustomization.yaml":      []byte("resources:\n- tiny/artifact_tiny.yaml\n"),
		"publish/generated/tiny/artifact_tiny.yaml": []byte("kind: Artifact\n"),
	}
	for p, data := range files {
		cat[p] = data
	}
	return cat
}

// TestMigrateKeepsClusterBases: a publish/generated/<cluster> base beside
// the old shared base (a cluster upgraded already, or made by hand: it
// has its own kustomization.yaml) is no artifact directory of the old
// base: it stays as it is, and is not copied into every cluster's base.
func TestMigrateKeepsClusterBases(t *testing.T) {
	cat := legacyCatalog(t, []string{"global", "edge"}, render.Files{
		gitops.StatePath("edge"):                         []byte("edge's own state\n"),
		"publish/generated/edge/kustomization.yaml":      []byte("resources:\n- tiny/artifact_tiny.yaml\n"),
		"publish/generated/edge/tiny/artifact_tiny.yaml": []byte("kind: Artifact # edge\n"),
	})
	if _, err := Migrate(cat); err != nil {
		t.Fatal(err)
	}
	if got := string(cat["publish/generated/edge/tiny/artifact_tiny.yaml"]); got != "kind: Artifact # edge\n" {
		t.Errorf("edge's own base was replaced: artifact_tiny.yaml = %q", got)
	}
	for p := range cat {
		if strings.HasPrefix(p, "publish/generated/global/edge/") || strings.HasPrefix(p, "publish/generated/edge/edge/") {
			t.Errorf("edge's base was copied into a cluster's base: %s", p)
		}
	}
	if _, ok := cat["publish/generated/global/tiny/artifact_tiny.yaml"]; !ok {
		t.Error("the old base was not copied to publish/generated/global")
	}
}

// TestMigrateOverlays: overlays with CRLF line ends and a trailing
// comment are rewritten to their own base; a kustomization nested below
// an overlay, which names the old base from deeper, is left for the
// render to report.
func TestMigrateOverlays(t *testing.T) {
	cat := legacyCatalog(t, []string{"global"}, render.Files{
		"kustomize/clusters/global/kustomization.yaml": []byte("resources:\r\n- ../../../publish/generated\r\n- ../../../publish/generated/ # the base\r\n"),
	})
	if _, err := Migrate(cat); err != nil {
		t.Fatal(err)
	}
	want := "resources:\r\n- ../../../publish/generated/global\r\n- ../../../publish/generated/global # the base\r\n"
	if got := string(cat["kustomize/clusters/global/kustomization.yaml"]); got != want {
		t.Errorf("overlay after the upgrade:\n%q\nwant\n%q", got, want)
	}
	if err := render.CheckOverlay(cat, "global"); err != nil {
		t.Errorf("CheckOverlay after the upgrade: %v", err)
	}
	cat = legacyCatalog(t, []string{"global"}, render.Files{
		"kustomize/clusters/global/kustomization.yaml":     []byte("resources:\n- sub\n"),
		"kustomize/clusters/global/sub/kustomization.yaml": []byte("resources:\n- ../../../../publish/generated\n"),
	})
	if _, err := Migrate(cat); err != nil {
		t.Fatal(err)
	}
	if _, err := render.Build(cat, "global"); err == nil || !strings.Contains(err.Error(), "publish/generated") {
		t.Errorf("Build of a nested kustomization naming the old base: %v, want an error naming publish/generated", err)
	}
}

// TestMigrateBadClusterNames: a cluster the old state file records under a
// name that is no plain directory name ("..", a path) is refused with the
// state file and the name, before any file is written to a path it
// makes.
func TestMigrateBadClusterNames(t *testing.T) {
	for _, name := range []string{`"../../kustomize/clusters/global"`, `"a/b"`, `".."`, `""`} {
		cat := legacyCatalog(t, []string{name}, nil)
		_, err := Migrate(cat)
		if err == nil || !strings.Contains(err.Error(), gitops.LegacyStatePath) {
			var odd []string
			for p := range cat {
				if strings.Contains(p, "..") || strings.Count(strings.TrimPrefix(p, gitops.StateDir+"/"), "/") > 0 && strings.HasPrefix(p, gitops.StateDir+"/") || strings.Contains(p, "//") {
					odd = append(odd, p)
				}
			}
			t.Errorf("cluster %s: Migrate = %v, want an error naming %s; paths made: %v", name, err, gitops.LegacyStatePath, odd)
		}
	}
}
