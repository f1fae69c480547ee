package manifest

import (
	"strings"
	"testing"
)

const goodChart = `apiVersion: app.alauda.cn/v1beta1
kind: PackageManifest
metadata:
  name: web.v1.2.3
spec:
  type: chart
  artifact: oci://registry.example.com/charts/web:1.2.3
  version: v1.2.3
  info:
    displayName: Web
  relatedImages:
  - registry.example.com/web/nginx:1.27
`

// TestParseChart: the shapes of a chart's spec.artifact and spec.chart
// that parse, and what each gives (ParseChartSource).
func TestParseChart(t *testing.T) {
	for _, tc := range []struct {
		name, artifact, chart string
		want                  ChartSource
	}{
		{"oci scheme", "oci://registry.example.com/charts/web:1.2.3", "", ChartSource{OCI: "registry.example.com/charts/web:1.2.3", Name: "web"}},
		{"no scheme", "registry.example.com:5000/charts/web:1.2.3", "", ChartSource{OCI: "registry.example.com:5000/charts/web:1.2.3", Name: "web"}},
		{"oci with the chart named", "oci://registry.example.com/charts/web:1.2.3", "web", ChartSource{OCI: "registry.example.com/charts/web:1.2.3", Name: "web"}},
		{"repository", "https://charts.example.com/stable/", "web", ChartSource{RepoURL: "https://charts.example.com/stable", Name: "web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := strings.Replace(goodChart, "oci://registry.example.com/charts/web:1.2.3", tc.artifact, 1)
			if tc.chart != "" {
				data = strings.Replace(data, "  version: v1.2.3", "  chart: "+tc.chart+"\n  version: v1.2.3", 1)
			}
			m, err := Parse("p/manifest.yaml", []byte(data))
			if err != nil {
				t.Fatal(err)
			}
			if m.Spec.Type != TypeChart || m.Artifact != "web" || m.Version.String() != "1.2.3" {
				t.Errorf("got %s %s %s", m.Spec.Type, m.Artifact, m.Version)
			}
			got, err := ParseChartSource(m.Spec.Artifact, m.Spec.Chart)
			if err != nil || got != tc.want {
				t.Errorf("source %+v (%v), want %+v", got, err, tc.want)
			}
		})
	}
	noV := strings.Replace(goodChart, "version: v1.2.3", "version: 1.2.3", 1)
	if m, err := Parse("x", []byte(noV)); err != nil || m.Version.String() != "1.2.3" {
		t.Errorf("a chart version without v: %v", err)
	}
}

// TestParseChartErrors: each wrong chart source is an error at the line
// of the field it is about.
func TestParseChartErrors(t *testing.T) {
	for _, tc := range []struct{ name, edit, with, want string }{
		{"repository without chart", "oci://registry.example.com/charts/web:1.2.3", "https://charts.example.com", "p/manifest.yaml:7: spec.chart field cannot be empty"},
		{"no tag", "charts/web:1.2.3", "charts/web", "p/manifest.yaml:7: spec.artifact \"oci://registry.example.com/charts/web\" is neither an OCI chart reference"},
		{"credentials in the URL", "oci://registry.example.com/charts/web:1.2.3", "https://user:pw@charts.example.com", "p/manifest.yaml:7: spec.artifact"},
		{"another chart named", "  version: v1.2.3", "  chart: api\n  version: v1.2.3", "p/manifest.yaml:8: spec.chart \"api\" is not the chart"},
		{"bad chart name", "oci://registry.example.com/charts/web:1.2.3\n", "https://charts.example.com\n  chart: -web\n", "p/manifest.yaml:8: spec.chart \"-web\" is not a chart name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p/manifest.yaml", []byte(strings.Replace(goodChart, tc.edit, tc.with, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
