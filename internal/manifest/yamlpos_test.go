package manifest

import (
	"strings"
	"testing"
)

// TestYAMLErrorLine: a YAML syntax error is reported at the line of the
// offending token (yaml.v3 said 5:1 for a bad indent on line 13, and the
// next line for a flow sequence left open).
func TestYAMLErrorLine(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(good, "\n"), "\n")
	for _, tc := range []struct {
		name string
		edit func([]string) []string
		line int
		want string
	}{
		{"bad indent", func(l []string) []string {
			// Line 14 ("      url: ...") indented one space short of its key.
			l[13] = "     url: https://etcd.io"
			return l
		}, 14, "did not find expected key"},
		{"unclosed flow sequence", func(l []string) []string {
			l[8] = "  arch: [linux/amd64"
			return l
		}, 9, "flow sequence opened here is not closed"},
		{"unclosed quote", func(l []string) []string {
			l[10] = `    displayName: "etcd`
			return l
		}, 11, "quoted scalar opened here is not closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Join(tc.edit(append([]string(nil), lines...)), "\n") + "\n"
			_, err := Parse("p/manifest.yaml", []byte(in))
			e, ok := err.(*Error)
			if !ok || e.Line != tc.line || !strings.Contains(e.Msg, tc.want) {
				t.Fatalf("got %v, want line %d %q\n%s", err, tc.line, tc.want, in)
			}
			if s := CheckYAMLSyntax([]byte(in)); s == nil || s.Line != tc.line {
				t.Errorf("CheckYAMLSyntax: %+v", s)
			}
		})
	}
	if s := CheckYAMLSyntax([]byte(good)); s != nil {
		t.Errorf("good manifest: %+v", s)
	}
}
