package pipeline

import (
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/manifest"
)

// TestSourceHostsOCIChart: the registry of an OCI chart written with
// oci:// gets the source credentials even when no related image is on
// it (the public charts' images are on other registries).
func TestSourceHostsOCIChart(t *testing.T) {
	m := &manifest.PackageManifest{}
	m.Spec.Artifact = "oci://charts.example.com:5000/charts/web:1.0.0"
	m.Spec.RelatedImages = []string{"registry.k8s.io/web/nginx:1"}
	c := &manifest.PackageManifest{}
	c.Spec.Artifact = "https://charts.example.org/stable"
	got := strings.Join(sourceHosts([]*manifest.PackageManifest{m, c}), " ")
	if got != "charts.example.com:5000 registry.k8s.io" {
		t.Errorf("source hosts %q, want the chart's registry and the image's", got)
	}
}
