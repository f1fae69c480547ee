package main

import (
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/testenv"
)

// tinyBundle builds the tiny test bundle of internal/scaffold (its CSV
// deploys images below imageHost) and pushes it to ref with opts.
func tinyBundle(t *testing.T, ref, imageHost string, opts ...remote.Option) {
	t.Helper()
	const from = "../../internal/scaffold/testdata/tiny/1.0.0"
	dir := t.TempDir()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, []byte(strings.ReplaceAll(string(data), "REGISTRY", imageHost)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := bundle.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, opts...); err != nil {
		t.Fatal(err)
	}
}

// tinyRepo writes a package repo whose one manifest names the bundle
// bundleRef and the related images of the tiny bundle below imageHost; it
// returns the repo's directory.
func tinyRepo(t *testing.T, bundleRef, imageHost string) string {
	t.Helper()
	repo := t.TempDir()
	dir := filepath.Join(repo, "packages", "tiny", "1.0.0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m := "apiVersion: app.alauda.cn/v1beta1\nkind: PackageManifest\nmetadata:\n  name: tiny.v1.0.0\nspec:\n  type: bundle\n  artifact: " + bundleRef +
		"\n  version: v1.0.0\n  arch: [linux/amd64]\n  info:\n    displayName: Tiny\n  relatedImages:\n  - " + imageHost + "/tiny/manager:v1.0.0\n  - " + imageHost + "/tiny/worker:v1.0.0\n"
	if err := os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return repo
}

// TestInfrastructureExit2Registry: against the real registry (distribution
// 2.8, TLS, htpasswd), a registry that cannot be used as configured (its CA
// not given, a wrong password, nothing listening on the port) makes lint
// (reading the bundle, or checking the related images of a bundle read
// elsewhere) and create exit 2 with the fix in the message: the CA flag,
// the credential flags of the command, "cannot reach". Lint reports none of
// it as a finding, and no output holds a password.
func TestInfrastructureExit2Registry(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("PUBLISH_SRC_USERNAME", "")
	t.Setenv("PUBLISH_SRC_PASSWORD", "")
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	good := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(good.Close)
	goodHost := strings.TrimPrefix(good.URL, "http://")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	// The bundle at the real registry; a copy at the good one whose
	// related images are at the registry under test.
	tinyBundle(t, reg.Host+"/tiny/bundle:v1.0.0", reg.Host, reg.Options()...)
	const wrong = "wrong-Pa55word-never-shown"
	creds := []string{"--src-username", reg.Username, "--src-password", reg.Password}
	for _, tc := range []struct {
		name, host string
		flags      []string
		want       string
	}{
		{"unknown CA", reg.Host, creds, "--ca-file"},
		{"401", reg.Host, []string{"--ca-file", reg.CAFile, "--src-username", reg.Username, "--src-password", wrong},
			"refused the credentials (401): check --src-username/--src-password or the docker config"},
		{"refused", closed, append([]string{"--retries", "1"}, creds...), "cannot reach registry " + closed},
	} {
		images := goodHost + "/" + strings.ToLower(strings.ReplaceAll(tc.name, " ", "-")) + "/bundle:v1.0.0"
		tinyBundle(t, images, tc.host)
		bundleRef := tc.host + "/tiny/bundle:v1.0.0"
		for _, cmd := range []struct {
			name string
			args []string
		}{
			{"lint bundle", []string{"lint", "--source", tinyRepo(t, bundleRef, tc.host), "--no-image-check"}},
			{"lint images", []string{"lint", "--source", tinyRepo(t, images, tc.host)}},
			{"create", []string{"create", filepath.Join(t.TempDir(), "new"), "--artifact", bundleRef}},
		} {
			t.Run(tc.name+"/"+cmd.name, func(t *testing.T) {
				out, code := runCmd(t, append(cmd.args, tc.flags...)...)
				if code != 2 {
					t.Errorf("exit %d, want 2", code)
				}
				if !strings.Contains(out, tc.want) {
					t.Errorf("the message does not say %q", tc.want)
				}
				for _, bad := range []string{"bundle/fetch", "images/check", "lint failed", "lint ok", reg.Password, wrong} {
					if strings.Contains(out, bad) {
						t.Errorf("the output holds %q", bad)
					}
				}
			})
		}
	}
}
