package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestYAMLErrorLine: a syntax error in publish.yaml is reported at the line
// of the offending token (yaml.v3 named the start of the block, line 5).
func TestYAMLErrorLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	for _, tc := range []struct{ body, want string }{
		{"apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nlint:\n  severity:\n    manifest/bom: warning\n    manifest/crlf: warning\n   manifest/utf8: warning\n", "publish.yaml:7: not valid YAML"},
		{"apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nimagePullSecrets: [a, b\ncluster: global\n", "publish.yaml:3: not valid YAML"},
		{"", "empty file"},
	} {
		os.WriteFile(p, []byte(tc.body), 0o644)
		if _, err := Load(p, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q\n%s", err, tc.want, tc.body)
		}
	}
}
