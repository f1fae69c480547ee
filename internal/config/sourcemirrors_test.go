package config

import (
	"strings"
	"testing"
)

// TestSourceMirrors: sourceMirrors entries become --source-mirror FROM=TO
// values; a wrong prefix or a FROM given twice is an error at its line.
func TestSourceMirrors(t *testing.T) {
	head := "apiVersion: " + APIVersion + "\nkind: " + Kind + "\n"
	c, err := Parse("publish.yaml", []byte(head+"sourceMirrors:\n- from: quay.io/acme\n  to: mirror.corp:5000/quay/acme\n- from: registry.example.com\n  to: mirror.corp:5000/example\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Values()["source-mirror"], "quay.io/acme=mirror.corp:5000/quay/acme,registry.example.com=mirror.corp:5000/example"; got != want {
		t.Errorf("source-mirror %q, want %q", got, want)
	}
	for _, tc := range []struct{ body, want string }{
		{"sourceMirrors:\n- from: quay.io/acme\n  to: mirror.corp\n- from: https://quay.io\n  to: mirror.corp\n", `publish.yaml:6: sourceMirrors[1]: from "https://quay.io"`},
		{"sourceMirrors:\n- from: quay.io\n  to: \"\"\n", "publish.yaml:4: sourceMirrors[0]: to \"\": empty"},
		{"sourceMirrors:\n- from: quay.io\n  to: a.corp\n- from: quay.io\n  to: b.corp\n", "publish.yaml:6: sourceMirrors[1]: from \"quay.io\" is given twice"},
		{"sourceMirrors:\n- from: quay.io\n  too: a.corp\n", "publish.yaml:5: unknown field"},
	} {
		_, err := Parse("publish.yaml", []byte(head+tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.body, err, tc.want)
		}
	}
}
