package registry

import (
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// An empty, non-nil source host list sends the source credentials to no
// registry (a pull request's base that names none); nil keeps the old
// meaning, every registry but the destination.
func TestSourceHostsEmptyMeansNone(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	src := Credentials{Username: "reader", Password: "s3cret"}
	for _, tc := range []struct {
		hosts []string
		want  bool
	}{{nil, true}, {[]string{}, false}, {[]string{"quay.io"}, false}, {[]string{"evil.example.com"}, true}} {
		c, err := New(Options{Src: src, SrcHosts: tc.hosts, DstHost: "dst.example.com"})
		if err != nil {
			t.Fatal(err)
		}
		reg, _ := name.NewRegistry("evil.example.com")
		a, err := c.Keychain().Resolve(reg)
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := a.Authorization()
		got := a != authn.Anonymous && cfg != nil && cfg.Password == "s3cret"
		if got != tc.want {
			t.Errorf("SrcHosts %#v: credentials sent to evil.example.com = %v, want %v", tc.hosts, got, tc.want)
		}
	}
}
