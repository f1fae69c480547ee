package pipeline

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/render"
)

// TestRunLintsEveryClusterBeforeMirroring: with two clusters, a lint error
// in an artifact only the second cluster gets stops the run before the
// first cluster's images are mirrored: the destination has no repository.
func TestRunLintsEveryClusterBeforeMirroring(t *testing.T) {
	f := newFixture(t)
	edgeOverlay(t, f.catalog, "")
	// other reuses tiny's bundle, whose package is tiny: bundle/package.
	data, err := os.ReadFile(filepath.Join(f.source, "packages/tiny/1.1.0/manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(f.source, "packages/other/1.1.0"), 0o755)
	os.WriteFile(filepath.Join(f.source, "packages/other/1.1.0/manifest.yaml"), []byte(strings.Replace(string(data), "name: tiny.v", "name: other.v", 1)), 0o644)
	f.commit(t, "add other")
	_, log, err := f.runOpts(t, func(o *Options) {
		o.Catalog.InitCatalog = true
		o.Clusters = []ClusterOptions{
			{Name: "edge", Include: []string{"tiny*"}, Render: render.Config{Namespace: "edge-system"}},
			{Name: "global"},
		}
	})
	var le *LintError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "cluster global") {
		t.Fatalf("run: %v, want global's lint error\n%s", err, log)
	}
	resp, err := http.Get("http://" + f.dst + "/v2/_catalog")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var cat struct{ Repositories []string }
	if err := json.NewDecoder(resp.Body).Decode(&cat); err != nil {
		t.Fatal(err)
	}
	if len(cat.Repositories) != 0 {
		t.Errorf("edge's images were mirrored before global's lint error: %v\n%s", cat.Repositories, log)
	}
}
