package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClustersTarget(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	os.WriteFile(p, []byte(`apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
clusters:
  global:
    target: alauda
  edge:
    target: olm
    olm:
      catalogImage: registry.local/olm/catalog
      baseImage: quay.io/operator-framework/opm:v1.60.0
      images:
      - quay.io/operator-framework/olm:v0.38.0
      catalogSource:
        namespace: olm
        pollInterval: 30m
`), 0o644)
	c, err := Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Target("edge") != TargetOLM || c.Target("global") != TargetAlauda || c.Target("other") != "" {
		t.Errorf("targets: edge %q, global %q, other %q", c.Target("edge"), c.Target("global"), c.Target("other"))
	}
	o := c.ClusterOLM("edge")
	if o.CatalogImage != "registry.local/olm/catalog" || o.CatalogSource.PollInterval != "30m" || len(o.Images) != 1 {
		t.Errorf("olm settings: %+v", o)
	}
	if (*Config)(nil).Target("edge") != "" {
		t.Error("nil config has a target")
	}

	os.WriteFile(p, []byte(`apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
clusters:
  edge:
    target: openshift
`), 0o644)
	_, err = Load(p, true)
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 4 {
		t.Fatalf("bad target: %v, want an error at line 4", err)
	}
	t.Log(err)
}

// TestClustersOCI: clusters.<name>.oci is read, and a bad reference is an
// error at its own line.
func TestClustersOCI(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	os.WriteFile(p, []byte(`apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
clusters:
  global:
    oci: registry.example.com/platform/operator-catalog
  edge:
    target: alauda
    oci: registry.example.com/platform/operator-catalog:edge-site
`), 0o644)
	c, err := Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.ClusterOCI("global") != "registry.example.com/platform/operator-catalog" || c.ClusterOCI("edge") != "registry.example.com/platform/operator-catalog:edge-site" || c.ClusterOCI("other") != "" || (*Config)(nil).ClusterOCI("global") != "" {
		t.Errorf("oci: global %q, edge %q", c.ClusterOCI("global"), c.ClusterOCI("edge"))
	}
	for _, bad := range []string{"registry.example.com/catalog@sha256:" + strings.Repeat("0", 64), "platform/catalog"} {
		os.WriteFile(p, []byte(`apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
clusters:
  edge:
    target: alauda
    oci: `+bad+`
`), 0o644)
		_, err = Load(p, true)
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != 6 || !strings.Contains(err.Error(), "clusters.edge.oci") {
			t.Fatalf("%s: %v, want an error at line 6 naming clusters.edge.oci", bad, err)
		}
		t.Log(err)
	}
}
