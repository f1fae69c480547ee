package registry_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestDebianRegistryErrors: the real registry (distribution 2.8, TLS and
// htpasswd) refuses a wrong password and a client that does not trust
// its CA; each error is typed, names the flags of the command that ran
// and only those.
func TestDebianRegistryErrors(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials from the machine
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	push := registry.Flags{
		Dst:      registry.CredentialFlags{Username: "--username", Password: "--password"},
		Registry: "--dst-repo", CA: "--ca-file", PlainHTTP: "--plain-http",
	}
	dst, err := name.ParseReference(reg.Ref("team/app:v1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		o       registry.Options
		kind    registry.Kind
		want    []string
		wantNot []string
	}{
		{"push, wrong password", registry.Options{CAFile: reg.CAFile, Flags: push, Dst: registry.Credentials{Username: reg.Username, Password: "wrong"}},
			registry.KindUnauthorized, []string{"refused the credentials (401)", "check --username/--password or the docker config"}, []string{"--dst-", "--src-", "again"}},
		{"run, wrong password", registry.Options{CAFile: reg.CAFile, Dst: registry.Credentials{Username: reg.Username, Password: "wrong"}},
			registry.KindUnauthorized, []string{"check --dst-username/--dst-password or the docker config"}, []string{"--username/", "again"}},
		{"push, no credentials", registry.Options{CAFile: reg.CAFile, Flags: push},
			registry.KindUnauthorized, []string{"--username/--password"}, []string{"--dst-"}},
		{"push, CA not given", registry.Options{Flags: push, Dst: registry.Credentials{Username: reg.Username, Password: reg.Password}},
			registry.KindUnknownAuthority, []string{"signed by an unknown authority: pass --ca-file"}, []string{"--insecure"}},
		{"run, CA not given", registry.Options{Dst: registry.Credentials{Username: reg.Username, Password: reg.Password}},
			registry.KindUnknownAuthority, []string{"pass --ca-file", "--insecure"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.DstHost = reg.Host
			c, err := registry.New(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			err = c.CheckPush(dst)
			var re *registry.Error
			if !errors.As(err, &re) || re.Kind != tc.kind || re.Op != registry.OpCheckPush || re.Side != registry.Destination {
				t.Fatalf("err = %v, want an *Error of kind %v", err, tc.kind)
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q does not say %q", msg, w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(msg, w) {
					t.Errorf("%q says %q", msg, w)
				}
			}
			if strings.Contains(msg, reg.Password) {
				t.Errorf("%q shows the password", msg)
			}
			if registry.IsAuth(err) != (tc.kind == registry.KindUnauthorized) {
				t.Errorf("IsAuth(%v) = %v", err, !registry.IsAuth(err))
			}
		})
	}
	c, err := registry.New(registry.Options{CAFile: reg.CAFile, DstHost: reg.Host, Dst: registry.Credentials{Username: reg.Username, Password: reg.Password}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckPush(dst); err != nil {
		t.Errorf("right password and CA: %v", err)
	}
}
