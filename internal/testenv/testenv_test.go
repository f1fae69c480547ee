package testenv

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	regtransport "github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// pushAndPull pushes a small random image to ref and checks that reading it
// back gives the same digest.
func pushAndPull(t *testing.T, r *Registry, ref string) {
	t.Helper()
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img, r.Options()...); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	got, err := remote.Image(tag, r.Options()...)
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	want, _ := img.Digest()
	if d, err := got.Digest(); err != nil || d != want {
		t.Fatalf("pulled digest %v (err %v), want %v", d, err, want)
	}
	if _, err := got.RawConfigFile(); err != nil {
		t.Fatalf("read config of %s: %v", ref, err)
	}
}

func get(t *testing.T, rt http.RoundTripper, url string) (*http.Response, error) {
	t.Helper()
	c := &http.Client{Transport: rt, Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err == nil {
		resp.Body.Close()
	}
	return resp, err
}

func TestRegistryTLSAuth(t *testing.T) {
	t.Parallel()
	r := StartRegistry(t, RegistryOptions{TLS: true, Auth: true})
	if r.CAFile == "" || r.Username == "" || r.Password == "" {
		t.Fatalf("missing CA or credentials: %+v", r)
	}
	pushAndPull(t, r, r.Ref("testenv/app:v1"))
	if _, err := os.Stat(filepath.Join(r.Dir, "docker", "registry", "v2", "repositories", "testenv", "app")); err != nil {
		t.Errorf("image not stored under Dir: %v", err)
	}

	// Anonymous, trusted: 401 with a basic challenge.
	resp, err := get(t, r.Transport(), r.URL()+"/v2/")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("anonymous GET /v2/: %s, WWW-Authenticate %q; want 401 with a challenge", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	tag, _ := name.ParseReference(r.Ref("testenv/app:v1"))
	_, err = remote.Image(tag, remote.WithTransport(r.Transport()))
	var terr *regtransport.Error
	if !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous pull: err = %v, want a 401 transport error", err)
	}

	// Untrusted client: certificate verification fails.
	_, err = get(t, http.DefaultTransport, r.URL()+"/v2/")
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) {
		t.Errorf("GET with default trust: err = %v, want a certificate verification error", err)
	}
}

func TestRegistryPlain(t *testing.T) {
	t.Parallel()
	r := StartRegistry(t, RegistryOptions{})
	if r.CAFile != "" || r.Username != "" || r.Password != "" {
		t.Fatalf("plain registry has CA or credentials: %+v", r)
	}
	if r.URL() != "http://"+r.Host {
		t.Errorf("URL() = %q", r.URL())
	}
	resp, err := get(t, r.Transport(), r.URL()+"/v2/")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v2/: %s, want 200", resp.Status)
	}
	pushAndPull(t, r, r.Ref("plain/app:latest"))
}

func TestRegistryOtherCombinations(t *testing.T) {
	t.Parallel()
	for _, opts := range []RegistryOptions{{TLS: true}, {Auth: true}} {
		r := StartRegistry(t, opts)
		pushAndPull(t, r, r.Ref("combo/app:v1"))
	}
}

func TestGitServer(t *testing.T) {
	t.Parallel()
	g := StartGitServer(t)
	url := g.NewBareRepo(t, "org/catalog")
	if want := g.URL + "/org/catalog.git"; url != want {
		t.Fatalf("NewBareRepo = %q, want %q", url, want)
	}
	if _, err := os.Stat(filepath.Join(g.Root, "org", "catalog.git", "HEAD")); err != nil {
		t.Fatalf("bare repo missing: %v", err)
	}
	auth := &githttp.BasicAuth{Username: g.Username, Password: g.Password}

	// Anonymous requests get a basic challenge.
	resp, err := get(t, http.DefaultTransport, url+"/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("anonymous info/refs: %s, WWW-Authenticate %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}

	// Cloning the empty repository reaches the server and reports it empty.
	work := filepath.Join(t.TempDir(), "work")
	repo, err := git.PlainClone(work, false, &git.CloneOptions{URL: url, Auth: auth})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		repo, err = git.PlainInitWithOptions(work, &git.PlainInitOptions{
			InitOptions: git.InitOptions{DefaultBranch: plumbing.Main},
		})
		if err == nil {
			_, err = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}})
		}
	}
	if err != nil {
		t.Fatalf("clone %s: %v", url, err)
	}
	commit := func(content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(work, "README"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		wt, err := repo.Worktree()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add("README"); err != nil {
			t.Fatal(err)
		}
		sig := &object.Signature{Name: "Test", Email: "test@example.com", When: time.Now()}
		if _, err := wt.Commit("update README", &git.CommitOptions{Author: sig}); err != nil {
			t.Fatal(err)
		}
	}
	refspec := config.RefSpec("refs/heads/main:refs/heads/main")

	commit("hello\n")
	if err := repo.Push(&git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{refspec}, Auth: auth}); err != nil {
		t.Fatalf("push: %v", err)
	}

	// The pushed commit is visible in a fresh clone.
	clone := filepath.Join(t.TempDir(), "clone")
	if _, err := git.PlainClone(clone, false, &git.CloneOptions{URL: url, Auth: auth, ReferenceName: plumbing.Main}); err != nil {
		t.Fatalf("clone after push: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(clone, "README")); err != nil || string(b) != "hello\n" {
		t.Fatalf("cloned README = %q, %v", b, err)
	}

	// A wrong password is rejected.
	commit("second\n")
	bad := &githttp.BasicAuth{Username: g.Username, Password: g.Password + "x"}
	err = repo.Push(&git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{refspec}, Auth: bad})
	if !errors.Is(err, transport.ErrAuthenticationRequired) {
		t.Fatalf("push with wrong password: err = %v, want %v", err, transport.ErrAuthenticationRequired)
	}
}

func TestNewBareRepoRejectsBadNames(t *testing.T) {
	// Exercised through a fake TB so the Fatalf does not fail this test.
	g := StartGitServer(t)
	for _, bad := range []string{"", "../x", "/abs", "a/../b"} {
		ft := &fatalRecorder{TB: t}
		func() {
			defer func() { recover() }()
			g.NewBareRepo(ft, bad)
		}()
		if !ft.fatal {
			t.Errorf("NewBareRepo(%q) did not fail", bad)
		}
	}
}

// fatalRecorder records Fatalf and Skip instead of acting on them; it panics
// to stop the caller as runtime.Goexit would.
type fatalRecorder struct {
	testing.TB
	fatal, skip bool
	msg         string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.fatal, f.msg = true, fmt.Sprintf(format, args...)
	panic("fatal")
}

func (f *fatalRecorder) Skip(args ...any) {
	f.skip, f.msg = true, fmt.Sprint(args...)
	panic("skip")
}

func TestRequire(t *testing.T) {
	if p := Require(t, "sh", "dash"); !filepath.IsAbs(p) {
		t.Errorf("Require(sh) = %q, want an absolute path", p)
	}
	const want = "integration test needs the Debian no-such-pkg package: apt-get install -y no-such-pkg"
	for _, env := range []string{"", "1"} {
		t.Setenv(RequireEnv, env)
		ft := &fatalRecorder{TB: t}
		func() {
			defer func() { recover() }()
			Require(ft, "testenv-no-such-binary", "no-such-pkg")
			t.Errorf("Require returned for a missing binary (%s=%q)", RequireEnv, env)
		}()
		if ft.skip != (env == "") || ft.fatal != (env == "1") || !strings.HasPrefix(ft.msg, want) {
			t.Errorf("%s=%q: skip=%v fatal=%v msg=%q", RequireEnv, env, ft.skip, ft.fatal, ft.msg)
		}
	}
}

// TestGitServerTruncatedPush: a client that dies in the middle of a push
// body (the crash tests SIGKILL publish there) leaves no git http-backend
// running: before, git 2.39 spun forever on the short body and the
// server's Close, at cleanup, never returned. The server keeps serving.
func TestGitServerTruncatedPush(t *testing.T) {
	t.Parallel()
	g := StartGitServer(t)
	url := g.NewBareRepo(t, "crash")
	conn, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	req := fmt.Sprintf("POST /crash.git/git-receive-pack HTTP/1.1\r\nHost: git\r\nAuthorization: Basic %s\r\n"+
		"Content-Type: application/x-git-receive-pack-request\r\nContent-Length: 7770\r\n\r\n0000",
		base64.StdEncoding.EncodeToString([]byte(g.Username+":"+g.Password)))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	// The client dies: the server sees the body end after 4 of 7770 bytes.
	conn.Close()
	auth := &githttp.BasicAuth{Username: g.Username, Password: g.Password}
	if _, err := git.PlainClone(filepath.Join(t.TempDir(), "c"), false, &git.CloneOptions{URL: url, Auth: auth}); err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		t.Fatalf("clone after a truncated push: %v", err)
	}
}

// TestSkip: Skip skips, and fails instead under PUBLISH_REQUIRE_INTEGRATION=1,
// with the same message either way.
func TestSkip(t *testing.T) {
	for _, env := range []string{"", "1"} {
		t.Setenv(RequireEnv, env)
		ft := &fatalRecorder{TB: t}
		func() {
			defer func() { recover() }()
			Skipf(ft, "needs %s", "a fixture")
			t.Errorf("Skipf returned (%s=%q)", RequireEnv, env)
		}()
		if ft.skip != (env == "") || ft.fatal != (env == "1") || !strings.HasPrefix(ft.msg, "needs a fixture") {
			t.Errorf("%s=%q: skip=%v fatal=%v msg=%q", RequireEnv, env, ft.skip, ft.fatal, ft.msg)
		}
	}
}
