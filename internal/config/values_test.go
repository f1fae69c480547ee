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
