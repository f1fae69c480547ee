package kind_test

import (
	"encoding/json"
	"strings"
	"testing"

	helmregistry "helm.sh/helm/v4/pkg/registry"

	"github.com/operator-publish/publish/internal/kind"

	"github.com/operator-publish/publish/internal/testenv"
)

// TestChartImageAndFiles: a repository's chart archive becomes the OCI
// artifact `helm push` makes (Helm's config and layer media types, the
// archive as the layer, Chart.yaml as the config, Helm's annotations but
// no creation time: the same digest every time), and its files are the
// archive's below the chart's directory; an archive with an entry
// outside that directory, or a path with "..", is refused.
func TestChartImageAndFiles(t *testing.T) {
	archive := testenv.ChartArchive(t, map[string]string{
		"web/Chart.yaml":            "apiVersion: v2\nname: web\nversion: 1.2.3\ndescription: A web server.\nhome: https://example.com\n",
		"web/templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n",
	})
	img, err := kind.ChartImage("charts.example.com/stable/web:1.2.3", archive)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := kind.ChartImage("charts.example.com/stable/web:1.2.3", archive)
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two packagings of one archive: %s and %s", d1, d2)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != helmregistry.ConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != helmregistry.ChartLayerMediaType {
		t.Errorf("manifest %+v", m)
	}
	if m.Annotations["org.opencontainers.image.title"] != "web" || m.Annotations["org.opencontainers.image.version"] != "1.2.3" || m.Annotations["org.opencontainers.image.url"] != "https://example.com" || m.Annotations["org.opencontainers.image.created"] != "" {
		t.Errorf("annotations %v", m.Annotations)
	}
	raw, _ := img.RawConfigFile()
	var meta struct{ Name, Version string }
	if err := json.Unmarshal(raw, &meta); err != nil || meta.Name != "web" || meta.Version != "1.2.3" {
		t.Errorf("config %s: %v", raw, err)
	}
	if h, _ := img.ConfigName(); h != m.Config.Digest {
		t.Errorf("config digest %s, manifest says %s", h, m.Config.Digest)
	}

	files, err := kind.ChartFiles("web", archive)
	if err != nil || len(files) != 2 || !strings.HasPrefix(string(files["Chart.yaml"]), "apiVersion: v2\nname: web") {
		t.Errorf("files %v: %v", files, err)
	}
	for _, bad := range []map[string]string{
		{"web/Chart.yaml": "x", "api/Chart.yaml": "y"},
		{"web/../../etc/passwd": "x"},
		{"Chart.yaml": "x"},
	} {
		if _, err := kind.ChartFiles("web", testenv.ChartArchive(t, bad)); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
