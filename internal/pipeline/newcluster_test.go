package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/render"
)

// TestClusterNewToCatalog: a cluster added to a catalog that global was
// published to (publish.yaml gains edge) has no overlay; run, plan and
// render stop
// before any write with an input error that names the file to create and
// the resource it must hold, and creating exactly that file makes the next
// run publish edge.
func TestClusterNewToCatalog(t *testing.T) {
	f := newFixture(t)
	f.run(t)
	opts := Options{Source: f.source, Mirror: mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true}, Catalog: catalogOpts(f.catalog), Cluster: "edge", Declared: []string{"global", "edge"}}
	_, err := Run(context.Background(), opts)
	var ie *InputError
	if err == nil || !errors.As(err, &ie) {
		t.Fatalf("run --cluster edge with no overlay: %v, want an input error", err)
	}
	for _, want := range []string{"kustomize/clusters/edge/kustomization.yaml", "resources:\n  - ../../../publish/generated/edge", "commit and push it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	if !strings.Contains(err.Error(), render.MissingOverlayHelp("edge")) {
		t.Errorf("the error is not MissingOverlayHelp:\n%v", err)
	}
	// plan and render stop with the same help.
	if _, err := PlanRun(context.Background(), PlanOptions{Options: opts}); err == nil || !strings.Contains(err.Error(), render.MissingOverlayHelp("edge")) {
		t.Errorf("plan --cluster edge with no overlay: %v", err)
	}
	scratch, _, _ := f.cloneCatalog(t)
	if _, err := Render(context.Background(), RenderOptions{Source: f.source, CatalogDir: scratch, Cluster: "edge", DstRegistry: f.dst + "/mirror", PlainHTTP: true}); err == nil || !strings.Contains(err.Error(), render.MissingOverlayHelp("edge")) {
		t.Errorf("render --cluster edge with no overlay: %v", err)
	}
	dir, repo, _ := f.cloneCatalog(t)
	if _, err := os.Stat(filepath.Join(dir, "rendered/edge")); err == nil {
		t.Error("the refused run wrote rendered/edge")
	}
	os.MkdirAll(filepath.Join(dir, "kustomize/clusters/edge"), 0o755)
	os.WriteFile(filepath.Join(dir, "kustomize/clusters/edge/kustomization.yaml"), []byte("resources:\n  - ../../../publish/generated/edge\n"), 0o644)
	commitPushAll(t, repo, "edge overlay, as the error says")
	if _, err := Run(context.Background(), opts); err != nil {
		t.Fatalf("run --cluster edge with the overlay the error asked for: %v", err)
	}
	if got := catalogFileOf(t, f.catalog, "rendered/edge/tiny/artifact_tiny.yaml"); !strings.Contains(got, "kind: Artifact") {
		t.Errorf("rendered/edge/tiny/artifact_tiny.yaml:\n%s", got)
	}
}
