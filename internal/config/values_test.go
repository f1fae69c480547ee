package config

import (
	"strings"
	"testing"
)

// TestClusterValues: clusters.<c>.values.<artifact> is read, and a path
// that leaves the package repo or an entry that names no artifact is an
// error at its line.
func TestClusterValues(t *testing.T) {
	const file = `apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
clusters:
  east:
    values:
      web: values/east/web.yaml
  west: {}
`
	c, err := Parse("publish.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ValuesFile("east", "web"); got != "values/east/web.yaml" {
		t.Errorf("east web: %q", got)
	}
	if c.ValuesFile("west", "web") != "" || c.ValuesFile("east", "api") != "" || (*Config)(nil).ValuesFile("east", "web") != "" {
		t.Error("a values file where none is given")
	}
	for _, tc := range []struct{ with, want string }{
		{"web: ../outside.yaml", "publish.yaml:6: clusters.east.values.web: \"../outside.yaml\" is not a path in the package repo"},
		{"web: /etc/passwd", "publish.yaml:6: clusters.east.values.web: \"/etc/passwd\" is not a path"},
		{"web: values/./east.yaml", "publish.yaml:6: clusters.east.values.web: \"values/./east.yaml\" is not a path"},
		{"Web_App: values/web.yaml", "publish.yaml:6: clusters.east.values: \"Web_App\" is not an artifact name"},
	} {
		_, err := Parse("publish.yaml", []byte(strings.Replace(file, "web: values/east/web.yaml", tc.with, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.with, err, tc.want)
		}
	}
}

// TestClusterCharts: clusters.<c>.chartGitURL and chartRepo are read; a
// chartRepo without a name or url, or whose url holds credentials or is
// not http(s), is an error at its line.
func TestClusterCharts(t *testing.T) {
	const file = `apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
clusters:
  east:
    chartGitURL: https://git.example.com/platform/catalog.git
  west:
    chartRepo: {name: public-charts, url: "http://captain-chartmuseum:8080/public-charts"}
`
	c, err := Parse("publish.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ClusterSettings("east").ChartGitURL; got != "https://git.example.com/platform/catalog.git" {
		t.Errorf("east chartGitURL %q", got)
	}
	if r := c.ClusterSettings("west").ChartRepo; r == nil || r.Name != "public-charts" || r.URL != "http://captain-chartmuseum:8080/public-charts" {
		t.Errorf("west chartRepo %+v", r)
	}
	for _, tc := range []struct{ with, want string }{
		{`{name: public-charts}`, "publish.yaml:7: clusters.west.chartRepo: want both name and url"},
		{`{name: p, url: "https://u:secret@cm.example.com/p"}`, "write it without one"},
		{`{name: p, url: "ftp://cm.example.com/p"}`, "want http(s)://host"},
		{`{name: p, url: "http://cm.example.com/p"}` + "\n    delivery: pull-request", "clusters.west: delivery: pull-request cannot be combined with chartRepo"},
	} {
		_, err := Parse("publish.yaml", []byte(strings.Replace(file, `{name: public-charts, url: "http://captain-chartmuseum:8080/public-charts"}`, tc.with, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: got %v, want %q", tc.with, err, tc.want)
		}
	}
}

// TestClusterKubernetesVersion: clusters.<c>.kubernetesVersion is read as
// written, and a value that is no version is an error at its line.
func TestClusterKubernetesVersion(t *testing.T) {
	const file = `apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
clusters:
  east:
    kubernetesVersion: v1.30.4
  west: {}
`
	c, err := Parse("publish.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.KubernetesVersion("east"); got != "v1.30.4" {
		t.Errorf("east: %q", got)
	}
	if c.KubernetesVersion("west") != "" || (*Config)(nil).KubernetesVersion("east") != "" {
		t.Error("a Kubernetes version where none is given")
	}
	_, err = Parse("publish.yaml", []byte(strings.Replace(file, "v1.30.4", "latest", 1)))
	if err == nil || !strings.Contains(err.Error(), `publish.yaml:5: clusters.east.kubernetesVersion: "latest" is not a Kubernetes version`) {
		t.Errorf("a bad version: %v", err)
	}
}
