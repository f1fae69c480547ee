package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/config"
)

func loadConfig(t *testing.T, body string) *config.Config {
	t.Helper()
	p := filepath.Join(t.TempDir(), "publish.yaml")
	os.WriteFile(p, []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\n"+body), 0o644)
	c, err := config.Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func names(rs []renderSettings) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Cluster)
	}
	return strings.Join(out, ",")
}

// TestResolveClusters: which clusters run, plan and render serve: every
// cluster of publish.yaml (global without any), publish.yaml cluster:,
// --clusters (declared ones only, named in the error with the file),
// --cluster; each with its publish.yaml settings over the flags.
func TestResolveClusters(t *testing.T) {
	cfg := loadConfig(t, "namespace: top\nclusters:\n  b: {include: [tiny], namespace: b-ns, dstRegistry: reg.b.example.com/ops}\n  a: {exclude: ['x-*'], imagePullSecrets: [s1]}\n")
	for _, tc := range []struct {
		cluster  string
		clusters []string
		cfg      *config.Config
		want     string
	}{
		{"", nil, nil, "global"},
		{"", nil, cfg, "a,b"},
		{"", []string{"b"}, cfg, "b"},
		{"edge", nil, cfg, "edge"},
		{"", nil, loadConfig(t, "cluster: b,a\nclusters: {a: {}, b: {}, c: {}}\n"), "b,a"},
		{"", []string{"global"}, nil, "global"},
	} {
		r := &renderFlags{cluster: tc.cluster, clusters: tc.clusters, namespace: "flag-ns", library: "platform"}
		rs, err := r.resolveClusters(tc.cfg)
		if err != nil || names(rs) != tc.want {
			t.Errorf("--cluster %q --clusters %v: %s %v, want %s", tc.cluster, tc.clusters, names(rs), err, tc.want)
		}
	}
	r := &renderFlags{namespace: "flag-ns", library: "platform"}
	rs, _ := r.resolveClusters(cfg)
	if a, b := rs[0], rs[1]; a.Render.Namespace != "flag-ns" || a.Render.ImagePullSecrets[0] != "s1" || a.Exclude[0] != "x-*" ||
		b.Render.Namespace != "b-ns" || b.Include[0] != "tiny" || b.DstRegistry != "reg.b.example.com/ops" {
		t.Errorf("settings: %+v %+v", a, b)
	}
	var ue *usageError
	r = &renderFlags{clusters: []string{"a", "nope"}}
	if _, err := r.resolveClusters(cfg); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--clusters") || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "publish.yaml") || !strings.Contains(err.Error(), "declares a, b") {
		t.Errorf("undeclared cluster: %v", err)
	}
	r = &renderFlags{clusters: []string{"edge"}}
	if _, err := r.resolveClusters(nil); !errors.As(err, &ue) || !strings.Contains(err.Error(), "declares no cluster") {
		t.Errorf("undeclared cluster without publish.yaml: %v", err)
	}
	r = &renderFlags{cluster: "a", clusters: []string{"b"}}
	if _, err := r.resolveClusters(cfg); !errors.As(err, &ue) {
		t.Errorf("--cluster and --clusters: %v", err)
	}
}
