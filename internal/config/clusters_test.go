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

// TestClusterOLMBundleFormat: bundleFormat reaches the olm target, and a
// wrong value is an error at its line naming the valid ones.
func TestClusterOLMBundleFormat(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	os.WriteFile(p, []byte(`apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
clusters:
  edge:
    target: olm
    olm:
      bundleFormat: olm.bundle.object
`), 0o644)
	c, err := Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ClusterOLM("edge").TargetOptions().BundleFormat; got != "olm.bundle.object" {
		t.Errorf("bundle format %q", got)
	}
	os.WriteFile(p, []byte(`apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
clusters:
  edge:
    target: olm
    olm:
      catalogImage: registry.local/olm/catalog
      bundleFormat: csv
`), 0o644)
	_, err = Load(p, true)
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 8 || !strings.Contains(err.Error(), "olm.csv.metadata") || !strings.Contains(err.Error(), "clusters.edge.olm.bundleFormat") {
		t.Fatalf("bad bundleFormat: %v, want an error at line 8", err)
	}
	t.Log(err)
}
