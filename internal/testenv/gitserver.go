package testenv

import (
	"bytes"
	"crypto/subtle"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// GitServer is a Git smart-HTTP server (git http-backend behind
// net/http/cgi) started by StartGitServer. It requires HTTP basic auth with
// Username and Password for every request, including clones and fetches.
type GitServer struct {
	// URL is the base URL, "http://127.0.0.1:PORT", without a trailing slash.
	URL string
	// Root is the directory holding the bare repositories (GIT_PROJECT_ROOT).
	Root string
	// Username and Password are the random basic-auth credentials.
	Username, Password string

	git string // path of the git binary
}

// hermeticGitEnv keeps the system and user Git configuration of the machine
// running the tests away from the server-side git processes.
var hermeticGitEnv = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}

// StartGitServer starts a Git smart-HTTP server on a free loopback port
// (httptest.NewServer) serving the bare repositories under a temporary Root,
// with fetch and push enabled for authenticated clients. A request without
// the right basic-auth credentials gets 401 with a WWW-Authenticate header.
// t.Cleanup closes the server.
//
// If git is not installed the test is skipped (or fails, see Require); if
// git http-backend cannot be found under `git --exec-path` the test fails.
func StartGitServer(t testing.TB) *GitServer {
	t.Helper()
	git := Require(t, "git", "git")
	out, err := exec.Command(git, "--exec-path").Output()
	if err != nil {
		t.Fatalf("testenv: git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("testenv: git http-backend not found: %v", err)
	}

	g := &GitServer{Root: t.TempDir(), Username: "testuser", Password: randomSecret(t), git: git}
	cgiHandler := &cgi.Handler{
		Path: backend,
		Root: "/",
		Env: append([]string{
			"GIT_PROJECT_ROOT=" + g.Root,
			"GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=" + g.Username,
		}, hermeticGitEnv...),
		Stderr: logWriter{t: t, prefix: "git http-backend: "},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		user, pass, ok := req.BasicAuth()
		if !ok ||
			subtle.ConstantTimeCompare([]byte(user), []byte(g.Username)) != 1 ||
			subtle.ConstantTimeCompare([]byte(pass), []byte(g.Password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="testenv git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		// The whole request body first: git http-backend (2.39) spins
		// forever on a body shorter than its Content-Length (a client
		// killed mid-push, as the crash tests do), and net/http/cgi never
		// stops it. A body that does not arrive whole runs no CGI.
		body, err := io.ReadAll(io.LimitReader(req.Body, maxGitRequest+1))
		if err != nil || len(body) > maxGitRequest {
			http.Error(w, "request body incomplete or too large", http.StatusBadRequest)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.TransferEncoding = nil
		req.Header.Set("Content-Length", strconv.Itoa(len(body)))
		cgiHandler.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

// maxGitRequest caps a request body to the test Git server, in bytes.
const maxGitRequest = 256 << 20

// NewBareRepo creates the empty bare repository Root/name.git (default
// branch main, pushes over HTTP enabled) and returns its clone URL,
// URL + "/" + name + ".git", which carries no credentials. name may contain
// slashes but must be a local relative path (no "..", not absolute); a bad
// name, an existing repository or a failing git command fails the test.
func (g *GitServer) NewBareRepo(t testing.TB, name string) string {
	t.Helper()
	if name == "" || !filepath.IsLocal(name) || filepath.ToSlash(filepath.Clean(name)) != name {
		t.Fatalf("testenv: NewBareRepo: bad repository name %q", name)
	}
	dir := filepath.Join(g.Root, filepath.FromSlash(name)+".git")
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("testenv: NewBareRepo: %s already exists", dir)
	}
	for _, args := range [][]string{
		{"init", "--quiet", "--bare", "--initial-branch=main", dir},
		{"-C", dir, "config", "http.receivepack", "true"},
	} {
		cmd := exec.Command(g.git, args...)
		// GIT_* from the caller (GIT_DIR in a hook, ...) must not leak in.
		cmd.Env = append(environWithout("GIT_"), hermeticGitEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("testenv: git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return g.URL + "/" + name + ".git"
}
