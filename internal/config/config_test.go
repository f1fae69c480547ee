package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, FileName)
	if c, err := Load(p, false); c != nil || err != nil {
		t.Fatalf("missing optional file: %v %v", c, err)
	}
	if _, err := Load(p, true); err == nil {
		t.Fatal("missing required file accepted")
	}
	os.WriteFile(p, []byte(`apiVersion: publish.operator-publish.io/v1alpha1
kind: PublishConfig
dstRegistry: reg.example.com/ops
plainHTTP: true
concurrency: 8
imagePullSecrets: [a, b]
lint:
  severity:
    manifest/related-image-digest: error
  waivers:
  - rule: bundle/validator/crd
    artifact: etcd
    reason: upstream
`), 0o644)
	c, err := Load(p, false)
	if err != nil {
		t.Fatal(err)
	}
	v := c.Values()
	for k, want := range map[string]string{"dst-registry": "reg.example.com/ops", "plain-http": "true", "concurrency": "8", "image-pull-secret": "a,b"} {
		if v[k] != want {
			t.Errorf("%s = %q, want %q", k, v[k], want)
		}
	}
	if _, set := v["namespace"]; set {
		t.Error("unset field in Values")
	}
	if c.Lint.Severity["manifest/related-image-digest"] != "error" || len(c.Lint.Waivers) != 1 || c.Lint.File != p {
		t.Errorf("lint: %+v", c.Lint)
	}
	for name, tc := range map[string]struct{ body, want string }{
		"unknown field": {"apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\ndstRegistr: x\n", "publish.yaml:3: unknown field dstRegistr"},
		"wrong type":    {"apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nconcurrency: many\n", "publish.yaml:3:"},
		"wrong kind":    {"apiVersion: v1\nkind: ConfigMap\n", "apiVersion/kind"},
		"password":      {"apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\ndstPassword: x\n", "unknown field dstPassword"},
	} {
		os.WriteFile(p, []byte(tc.body), 0o644)
		if _, err := Load(p, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
	}
}

func TestLintLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	os.WriteFile(p, []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nlint:\n  severity:\n    manifest/bom: loud\n  waivers:\n  - rule: manifest/bom\n    reason: ok\n  - rule: manifest/bom\n"), 0o644)
	c, err := Load(p, false)
	if err != nil {
		t.Fatal(err)
	}
	if c.Lint.Lines["severity.manifest/bom"] != 5 || c.Lint.Lines["waivers.1"] != 9 {
		t.Errorf("lines: %v", c.Lint.Lines)
	}
}

// TestUnknownFieldPathAndSuggestion: an unknown publish.yaml field is named
// by its path, with the nearest field of that place when one is close, and
// a credential is sent to its PUBLISH_* variable.
func TestUnknownFieldPathAndSuggestion(t *testing.T) {
	head := "apiVersion: " + APIVersion + "\nkind: " + Kind + "\n"
	for _, tc := range []struct{ body, want string }{
		{"dstRegistri: r.example.com\n", `publish.yaml:3: unknown field dstRegistri: did you mean dstRegistry?`},
		{"clusters:\n  edge:\n    namspace: x\n", `publish.yaml:5: unknown field clusters.edge.namspace: did you mean namespace?`},
		{"dstPassword: secret\n", `publish.yaml:3: unknown field dstPassword: credentials are not read from publish.yaml: set PUBLISH_DST_PASSWORD`},
		{"zzz: 1\n", `publish.yaml:3: unknown field zzz is not a publish.yaml field`},
		{"clusters:\n  edge:\n    olmm:\n      bundleFormat: x\n", `publish.yaml:5: unknown field clusters.edge.olmm: did you mean olm?`},
		{"clusters:\n  edge:\n    zzz: 1\n", `publish.yaml:5: unknown field clusters.edge.zzz is not a publish.yaml field`},
	} {
		p := filepath.Join(t.TempDir(), "publish.yaml")
		if err := os.WriteFile(p, []byte(head+tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p, true)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.body, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error prints the value: %v", tc.body, err)
		}
	}
}

// TestFieldErrorsNamePath: a value of the wrong type, a bad catalogSource
// setting and a credential in a section are each named by their field
// path, and a credential is sent to the variable the command reads.
func TestFieldErrorsNamePath(t *testing.T) {
	head := "apiVersion: " + APIVersion + "\nkind: " + Kind + "\n"
	olmHead := "clusters:\n  edge:\n    target: olm\n    olm:\n      catalogSource:\n"
	for _, tc := range []struct{ body, want string }{
		{"concurrency: many\n", "publish.yaml:3: concurrency: cannot construct"},
		{"clusters:\n  edge:\n    olm:\n      clusterCatalog:\n        priority: high\n", "publish.yaml:7: clusters.edge.olm.clusterCatalog.priority: cannot construct"},
		{olmHead + "        pollInterval: tenminutes\n", `publish.yaml:8: clusters.edge.olm.catalogSource.pollInterval: poll interval "tenminutes"`},
		{olmHead + "        name: Not_A_Name\n", "publish.yaml:8: clusters.edge.olm.catalogSource.name:"},
		{olmHead + "        pollIntervall: 10m\n", "publish.yaml:8: unknown field clusters.edge.olm.catalogSource.pollIntervall: did you mean pollInterval?"},
		{"forge:\n  token: s3cret\n", "publish.yaml:4: unknown field forge.token: credentials are not read from publish.yaml: set PUBLISH_FORGE_TOKEN"},
		{"clusters:\n  edge:\n    catalogPassword: s3cret\n", "set PUBLISH_CATALOG_PASSWORD"},
		{"clusters:\n  edge:\n    chartRepo:\n      name: public-charts\n      url: http://cm.example.com/public-charts\n      password: s3cret\n", "set PUBLISH_CHART_REPO_PASSWORD"},
		{"password: s3cret\n", "set its variable (one of PUBLISH_SRC_USERNAME"},
		{"clusters:\n  edge:\n    rewriteImages: templates\n", `publish.yaml:5: clusters.edge.rewriteImages: "templates" is not values`},
	} {
		_, err := Parse("publish.yaml", []byte(head+tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.body, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: the error prints the value: %v", tc.body, err)
		}
	}
}
