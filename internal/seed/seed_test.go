package seed

import (
	"errors"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
)

// TestMigrate: a catalog of the layout before state per cluster becomes
// one state file and one generated base per cluster the old state records,
// every overlay naming its own base; a catalog already upgraded is left as
// it is.
func TestMigrate(t *testing.T) {
	legacy := "apiVersion: " + gitops.LegacyStateAPIVersion + "\nkind: " + gitops.StateKind + "\nrendered:\n  global: sha256:g\n  edge: sha256:e\nartifacts: []\n"
	cat := render.Files{
		gitops.LegacyStatePath:                         []byte(legacy),
		"publish/generated/kustomization.yaml":         []byte("resources:\n- op/artifact_op.yaml\n"),
		"publish/generated/op/artifact_op.yaml":        []byte("kind: Artifact\n"),
		"kustomize/clusters/global/kustomization.yaml": []byte("resources:\n- ../../../publish/generated\n"),
		"kustomize/clusters/edge/kustomization.yaml":   []byte("resources:\n- ../../../publish/generated/ # the old base\r\n"),
		"rendered/global/op/artifact_op.yaml":          []byte("kept"),
	}
	changed, err := Migrate(cat)
	if err != nil || !changed {
		t.Fatalf("Migrate: %v, %v", changed, err)
	}
	for _, c := range []string{"global", "edge"} {
		if _, ok := cat[gitops.StatePath(c)]; !ok {
			t.Errorf("no %s", gitops.StatePath(c))
		}
		if string(cat[render.GeneratedBase(c)+"/op/artifact_op.yaml"]) != "kind: Artifact\n" {
			t.Errorf("the old base was not copied to %s", render.GeneratedBase(c))
		}
		if k := string(cat["kustomize/clusters/"+c+"/kustomization.yaml"]); !strings.Contains(k, "../../../publish/generated/"+c) {
			t.Errorf("overlay of %s: %q", c, k)
		}
	}
	for _, gone := range []string{gitops.LegacyStatePath, "publish/generated/kustomization.yaml", "publish/generated/op/artifact_op.yaml"} {
		if _, ok := cat[gone]; ok {
			t.Errorf("%s is still there", gone)
		}
	}
	if string(cat["rendered/global/op/artifact_op.yaml"]) != "kept" {
		t.Error("rendered/ was touched")
	}
	if changed, err := Migrate(cat); err != nil || changed {
		t.Errorf("a second Migrate: %v, %v", changed, err)
	}
}

// TestPrepare: a first publish seeds the template and every cluster's
// overlay; a cluster new to a catalog others were published to gets no
// seed and is told which overlay to create; a repo that is someone else's
// project is refused; a state file without its lock is refused.
func TestPrepare(t *testing.T) {
	cat := render.Files{}
	st, err := Prepare(cat, Options{Cluster: "global", RunClusters: []string{"edge"}, Empty: true, Overlays: true})
	if err != nil || len(st.Artifacts) != 0 {
		t.Fatalf("first publish: %v, %v", st, err)
	}
	for _, p := range []string{"kustomize/clusters/global/kustomization.yaml", "kustomize/clusters/edge/kustomization.yaml"} {
		if _, ok := cat[p]; !ok {
			t.Errorf("first publish did not seed %s", p)
		}
	}
	if !strings.Contains(string(cat["kustomize/clusters/edge/kustomization.yaml"]), "publish/generated/edge") {
		t.Errorf("edge's overlay names another base: %s", cat["kustomize/clusters/edge/kustomization.yaml"])
	}

	published := render.Files{
		gitops.StatePath("global"):                     []byte("apiVersion: " + gitops.StateAPIVersion + "\nkind: " + gitops.StateKind + "\nartifacts: []\n"),
		"kustomize/clusters/global/kustomization.yaml": []byte("resources:\n- ../../../publish/generated/global\n"),
	}
	_, err = Prepare(published, Options{Cluster: "edge", Overlays: true})
	var in *model.InputError
	if !errors.As(err, &in) || !strings.Contains(err.Error(), render.MissingOverlayHelp("edge")) {
		t.Errorf("a cluster new to the catalog: %v", err)
	}
	if _, ok := published["argocd/application.yaml"]; ok {
		t.Error("a cluster new to a published catalog seeded the template")
	}

	foreign := render.Files{"main.go": []byte("package main\n")}
	if _, err := Prepare(foreign, Options{Cluster: "global", Overlays: true}); !errors.As(err, new(*gitops.NotCatalogError)) {
		t.Errorf("someone else's repo: %v", err)
	}

	unlocked := render.Files{"publish/generated/global/kustomization.yaml": []byte("resources: []\n")}
	if _, err := Prepare(unlocked, Options{Cluster: "global"}); err == nil || !strings.Contains(err.Error(), "restore it") {
		t.Errorf("generated objects without their state: %v", err)
	}
}
