package registry

import (
	"strings"
	"testing"
)

// TestSourceMirrorRewrite: the longest FROM prefix wins, prefixes match on
// path boundaries only, tags and digests stay, and a reference no mirror
// matches is read where it is.
func TestSourceMirrorRewrite(t *testing.T) {
	c, err := New(Options{SourceMirrors: []SourceMirror{
		{From: "quay.io", To: "mirror.corp:5000/quay"},
		{From: "quay.io/acme", To: "mirror.corp:5000/vetted/acme"},
		{From: "docker.io/library", To: "mirror.corp:5000/hub"},
		{From: "registry.example.com/team/op", To: "mirror.corp:5000/op"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	const dg = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct{ ref, want string }{
		{"quay.io/acme/operator:v1", "mirror.corp:5000/vetted/acme/operator:v1"},
		{"quay.io/acmex/operator:v1", "mirror.corp:5000/quay/acmex/operator:v1"}, // not below quay.io/acme
		{"quay.io/other/x@" + dg, "mirror.corp:5000/quay/other/x@" + dg},
		{"busybox:1.36", "mirror.corp:5000/hub/busybox:1.36"},
		{"registry.example.com/team/op:v2", "mirror.corp:5000/op:v2"},
		{"registry.example.com/team/op-bundle:v2", "registry.example.com/team/op-bundle:v2"},
		{"ghcr.io/acme/operator:v1", "ghcr.io/acme/operator:v1"},
	} {
		if got := c.ReadRef(tc.ref); got != tc.want {
			t.Errorf("%s: read at %s, want %s", tc.ref, got, tc.want)
		}
	}
}

// TestParseSourceMirror: FROM=TO with registry[/path] prefixes on both
// sides; anything else says what is wanted.
func TestParseSourceMirror(t *testing.T) {
	if m, err := ParseSourceMirror("quay.io/acme=mirror.corp:5000/quay/acme"); err != nil || m.From != "quay.io/acme" || m.To != "mirror.corp:5000/quay/acme" {
		t.Errorf("%+v %v", m, err)
	}
	for _, bad := range []string{"quay.io/acme", "=mirror.corp", "quay.io=", "https://quay.io=mirror.corp", "quay.io/acme:v1=mirror.corp", "quay.io=mirror.corp/x@sha256:1", "quay.io=Mirror Corp"} {
		if _, err := ParseSourceMirror(bad); err == nil || !strings.Contains(err.Error(), "want") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
