package registry

import (
	"strings"
	"testing"
)

// TestCheckReference holds references to the distribution grammar:
// go-containerregistry's strict parsing accepts every one of the refused
// ones.
func TestCheckReference(t *testing.T) {
	for _, ok := range []string{
		"busybox", "busybox:1.36", "docker.io/library/busybox:1", "localhost:5000/a/b:v1",
		"reg.example.com/team-a/x__y/z--w:v1.0-rc_1", "[::1]:5000/a:v1",
		"reg.example.com/a/b@sha256:" + strings.Repeat("a", 64),
		"reg.example.com/a/b:v1@sha256:" + strings.Repeat("a", 64),
	} {
		if err := CheckReference(ok); err != nil {
			t.Errorf("CheckReference(%q) = %v, want nil", ok, err)
		}
	}
	for ref, want := range map[string]string{
		"reg.example.com/src/../team-b/x:v1":                  `has a ".." path component`,
		"reg.example.com/../x:v1":                             `has a ".." path component`,
		"reg.example.com/a/./x:v1":                            `has a "." path component`,
		"reg.example.com/a//x:v1":                             "empty path component",
		"reg.example.com/a/x/:v1":                             "empty path component",
		"reg.example.com:0/a:v1":                              `registry "reg.example.com:0"`,
		"reg.example.com:65536/a:v1":                          `registry "reg.example.com:65536"`,
		"reg.example.com/a/-x:v1":                             `path component "-x"`,
		"reg.example.com/a:.v1":                               `tag ".v1" is not valid`,
		"reg.example.com/a@sha256:abc":                        "is not ALGORITHM:HEX",
		"reg.example.com/" + strings.Repeat("a", 256) + ":v1": "longer than 255",
	} {
		if err := CheckReference(ref); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckReference(%q) = %v, want an error saying %q", ref, err, want)
		}
		if _, err := ParseStrict(ref); err == nil {
			t.Errorf("ParseStrict(%q) accepted it", ref)
		}
	}
}
