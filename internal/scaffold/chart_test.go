package scaffold

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"

	"github.com/operator-publish/publish/internal/testenv"
)

// TestCreateChart: publish create --artifact oci://... writes the
// manifest of a chart: spec.type chart, the name and version of
// Chart.yaml, its description, and every image the chart renders with
// its own values, in full; the file passes the manifest rules. A chart
// that is not there is an input error.
func TestCreateChart(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	files := map[string]string{
		"web/Chart.yaml":                "apiVersion: v2\nname: web\nversion: 1.0.0\ndescription: A web server.\n",
		"web/values.yaml":               "image: nginx:1.27\n",
		"web/templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      initContainers:\n      - name: init\n        image: " + host + "/web/init:1\n      containers:\n      - name: web\n        image: {{ .Values.image }}\n",
	}
	testenv.PushChart(t, host+"/charts/web:1.0.0", testenv.ChartArchive(t, files), nil)

	dir := filepath.Join(t.TempDir(), "packages/web/1.0.0")
	out, err := Create(context.Background(), Options{Dir: dir, Artifact: "oci://" + host + "/charts/web:1.0.0", Mirror: mirror.Options{PlainHTTP: true}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(out, data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if m.Spec.Type != manifest.TypeChart || m.Artifact != "web" || m.Version.String() != "1.0.0" || m.Spec.Info.Description != "A web server." || m.Spec.Info.DisplayName != "web" {
		t.Errorf("manifest:\n%s", data)
	}
	if want := []string{host + "/web/init:1", "docker.io/library/nginx:1.27"}; !reflect.DeepEqual(m.Spec.RelatedImages, want) {
		t.Errorf("relatedImages %v, want %v", m.Spec.RelatedImages, want)
	}
	for _, f := range lint.ManifestFile("manifest.yaml", data) {
		if f.Severity == lint.Error {
			t.Errorf("the manifest fails lint: %s", f)
		}
	}

	_, err = Create(context.Background(), Options{Dir: t.TempDir(), Artifact: "oci://" + host + "/charts/gone:1.0.0", Mirror: mirror.Options{PlainHTTP: true}})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a missing chart: %v, want an input error", err)
	}
}
