package main

import (
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestPushErrorsNameItsFlags: publish push against the real registry
// (distribution 2.8, TLS, htpasswd) with a wrong password, with no
// credentials at all and without the CA names push's own flags, says the
// archive's name once, and never suggests a rerun for a 401.
func TestPushErrorsNameItsFlags(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("PUBLISH_DST_USERNAME", "")
	t.Setenv("PUBLISH_DST_PASSWORD", "")
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})

	src := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(src.Close)
	ref := strings.TrimPrefix(src.URL, "http://") + "/example/app:v1"
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "all.tgz")
	if _, err := archive.WriteFile(t.Context(), out, archive.PackageOptions{Images: []archive.Image{{Ref: ref, Bundle: true}}, Level: archive.DefaultLevel}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		args    []string
		want    []string
		wantNot []string
	}{
		{"wrong password", []string{"--username", reg.Username, "--password", "wrong", "--ca-file", reg.CAFile},
			[]string{"refused the credentials (401)", "--dst-username/--dst-password"}, []string{"again", "rerun"}},
		{"no credentials", []string{"--no-auth", "--ca-file", reg.CAFile},
			[]string{"refused the credentials (401)"}, []string{"again", "rerun"}},
		{"no CA", []string{"--username", reg.Username, "--password", reg.Password},
			[]string{"unknown authority", "--ca-file"}, []string{"--dst-username", "again", "rerun"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := newRootCmd()
			root.SetArgs(append([]string{"push", out, "--dst-repo", reg.Host + "/mirror"}, tc.args...))
			var buf bytes.Buffer
			root.SetOut(&buf)
			root.SetErr(&buf)
			err := root.Execute()
			if err == nil {
				t.Fatalf("push succeeded: %s", buf.String())
			}
			msg := err.Error()
			t.Log(msg)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not say %q", w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(msg, w) {
					t.Errorf("error says %q", w)
				}
			}
			if n := strings.Count(msg, "all.tgz"); n > 1 {
				t.Errorf("error names the archive %d times", n)
			}
			if strings.Contains(msg+buf.String(), reg.Password) {
				t.Error("the password is printed")
			}
		})
	}
}
