package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/target"
)

// olmSettings returns the settings the olm target decoded from
// clusters.<cluster>.olm of c.
func olmSettings(t *testing.T, c *Config, cluster string) target.OLMOptions {
	t.Helper()
	o, ok := c.TargetSettings(cluster, target.OLM).(target.OLMOptions)
	if !ok {
		t.Fatalf("clusters.%s.olm: settings %T, want target.OLMOptions", cluster, c.TargetSettings(cluster, target.OLM))
	}
	return o
}

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
      baseImage: quay.io/operator-framework/opm:v1.73.0
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
	if c.Target("edge") != target.OLM || c.Target("global") != target.Alauda || c.Target("other") != "" {
		t.Errorf("targets: edge %q, global %q, other %q", c.Target("edge"), c.Target("global"), c.Target("other"))
	}
	o := olmSettings(t, c, "edge")
	if o.CatalogImage != "registry.local/olm/catalog" || o.Source.PollInterval != "30m" || len(o.Images) != 1 {
		t.Errorf("olm settings: %+v", o)
	}
	if (*Config)(nil).Target("edge") != "" {
		t.Error("nil config has a target")
	}
	if c.TargetSettings("global", target.OLM) != nil || (*Config)(nil).TargetSettings("edge", target.OLM) != nil {
		t.Error("settings of a cluster without an olm block")
	}
	// An empty block is the defaults.
	c, err = Parse(p, []byte("apiVersion: "+APIVersion+"\nkind: "+Kind+"\nclusters:\n  edge:\n    target: olm\n    olm:\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o := olmSettings(t, c, "edge"); o.CatalogImage != "" || o.UsesOLMv1() {
		t.Errorf("empty olm block: %+v", o)
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
	if got := olmSettings(t, c, "edge").BundleFormat; got != "olm.bundle.object" {
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

// TestClusterOLMv1: catalogKinds, clusterCatalog and clusterExtensions
// reach the olm target and lint learns the cluster uses OLM v1; wrong
// values are errors at their line.
func TestClusterOLMv1(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	head := `apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
clusters:
  global:
    target: olm
  edge:
    target: olm
    olm:
`
	os.WriteFile(p, []byte(head+`      catalogKinds: [CatalogSource, ClusterCatalog]
      clusterCatalog:
        pollIntervalMinutes: 30
      clusterExtensions:
      - package: etcd
        namespace: etcd
        channels: [stable]
        version: ">=0.9.0 <1"
        serviceAccount: etcd-installer
        watchNamespace: etcd
`), 0o644)
	c, err := Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	o := olmSettings(t, c, "edge")
	if !o.UsesOLMv1() || o.ClusterCatalog.PollIntervalMinutes != 30 || len(o.Extensions) != 1 || o.Extensions[0].ServiceAccount != "etcd-installer" || o.Extensions[0].Version != ">=0.9.0 <1" {
		t.Errorf("olm v1 settings: %+v", o)
	}
	if e := o.Extensions[0]; e.WatchNamespace != "etcd" || e.Where != p+":13" {
		t.Errorf("clusterExtensions[0]: watchNamespace %q at %q, want etcd at %s:13", e.WatchNamespace, e.Where, p)
	}
	if got := c.Lint.OLMv1Clusters; len(got) != 1 || got[0] != "edge" {
		t.Errorf("lint OLM v1 clusters: %v", got)
	}
	for _, tc := range []struct {
		body string
		line int
		want string
	}{
		{"      catalogKinds: [CatalogSource, Subscription]\n", 9, "catalogKinds"},
		{"      catalogKinds:\n      - ClusterCatalog\n      - OperatorGroup\n", 11, "OperatorGroup"},
		{"      clusterExtensions:\n      - package: etcd\n        namespace: etcd\n", 9, "need catalogKinds"},
		{"      catalogKinds: [ClusterCatalog]\n      clusterExtensions:\n      - package: etcd\n        namespace: etcd\n      - package: flux\n", 13, "namespace is required"},
		{"      catalogKinds: [ClusterCatalog]\n      clusterExtensions:\n      - package: etcd\n        namespace: etcd\n        version: \"> = 1\"\n", 11, "version"},
		{"      catalogKinds: [ClusterCatalog]\n      clusterCatalog:\n        pollIntervalMinutes: -5\n", 10, "pollIntervalMinutes"},
		{"      clusterCatalog:\n        name: ours\n", 9, "catalogKinds does not include ClusterCatalog"},
		{"      imageRedirection:\n      - ImageDigestMirrorSet\n      - docker\n", 11, "imageRedirection"},
	} {
		os.WriteFile(p, []byte(head+tc.body), 0o644)
		_, err := Load(p, true)
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error at line %d naming %q", tc.body, err, tc.line, tc.want)
		}
	}
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

// TestClusterSelection: include/exclude patterns and per-cluster settings
// load; a pattern path.Match refuses is an error at its line.
func TestClusterSelection(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, FileName)
	os.WriteFile(p, []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\ncluster: b\nclusters:\n  b:\n    include: ['cert-*']\n    namespace: ns\n    dstRegistry: reg.example.com/b\n"), 0o644)
	c, err := Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if cs := c.ClusterSettings("b"); cs.Include[0] != "cert-*" || cs.Namespace != "ns" || cs.DstRegistry != "reg.example.com/b" || c.DefaultClusters()[0] != "b" {
		t.Errorf("%+v", cs)
	}
	if _, ok := c.Values()["cluster"]; ok {
		t.Error("cluster: sets --cluster")
	}
	os.WriteFile(p, []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nclusters:\n  b:\n    exclude: ['[a-']\n"), 0o644)
	if _, err := Load(p, true); err == nil || !strings.Contains(err.Error(), ":5: clusters.b.exclude") {
		t.Errorf("bad pattern: %v", err)
	}
}

// TestClusterDelivery: delivery, pullRequest and forge are read; bad
// values are errors at their line.
func TestClusterDelivery(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, FileName)
	head := "apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\n"
	os.WriteFile(p, []byte(head+"forge:\n  kind: gitlab\n  apiURL: https://git.example.com/api/v4\nclusters:\n  prod:\n    delivery: pull-request\n    pullRequest:\n      branch: catalog/prod\n      labels: [publish]\n      autoMerge: squash\n      approvers:\n      - users: [alice]\n      - teams: [acme/platform]\n        artifacts: cert-*\n"), 0o644)
	c, err := Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	cs := c.ClusterSettings("prod")
	if cs.Delivery != "pull-request" || cs.PullRequest.Branch != "catalog/prod" || cs.PullRequest.Labels[0] != "publish" || cs.PullRequest.AutoMerge != "squash" ||
		len(cs.PullRequest.Approvers) != 2 || cs.PullRequest.Approvers[0].Users[0] != "alice" || cs.PullRequest.Approvers[1].Artifacts != "cert-*" {
		t.Errorf("%+v", cs)
	}
	if v := c.Values(); v["forge"] != "gitlab" || v["forge-api-url"] != "https://git.example.com/api/v4" {
		t.Errorf("forge values: %v", v)
	}
	for body, want := range map[string]string{
		"clusters:\n  prod:\n    delivery: merge\n":                                             ":5: clusters.prod.delivery: \"merge\" is not one of push, pull-request",
		"clusters:\n  prod:\n    pullRequest:\n      autoMerge: yes-please\n":                   ":5: clusters.prod.pullRequest.autoMerge",
		"clusters:\n  prod:\n    oci: reg.example.com/c\n    delivery: pull-request\n":          ":6: clusters.prod: delivery: pull-request cannot be combined with oci",
		"clusters:\n  prod:\n    pullRequest:\n      approvers:\n      - artifacts: a*\n":       ":5: clusters.prod.pullRequest.approvers: entry 1 names no users and no teams",
		"clusters:\n  prod:\n    pullRequest:\n      approvers:\n      - users: [\"@alice\"]\n": ":5: clusters.prod.pullRequest.approvers: entry 1: \"@alice\" is not a login",
		"forge:\n  kind: bitbucket\n":                                                           ":3: forge.kind: \"bitbucket\"",
		"forge:\n  token: x\n":                                                                  ":4:",
	} {
		os.WriteFile(p, []byte(head+body), 0o644)
		if _, err := Load(p, true); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}
