package testenv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// GiteaEnv names the environment variable holding the path of the gitea
// binary that Gitea starts: PUBLISH_GITEA="$(hack/gitea/build.sh)". The
// binary's directory must also hold the options/ and templates/ directories
// that hack/gitea/build.sh copies beside it (the build embeds no assets).
const GiteaEnv = "PUBLISH_GITEA"

// giteaStartTimeout bounds each gitea command run before the server starts
// (migrate, admin user create, ...) and the wait for the server's API.
const giteaStartTimeout = 2 * time.Minute

// giteaStopTimeout is how long t.Cleanup waits for the server to stop after
// SIGTERM before it kills it.
const giteaStopTimeout = 30 * time.Second

// GiteaServer is a real Gitea server (the binary of hack/gitea/build.sh)
// started by Gitea on a loopback port, with an admin user and an access
// token with every scope. It serves the Gitea REST API under URL+"/api/v1"
// (documented at URL+"/api/swagger") and Git smart HTTP at
// URL+"/OWNER/REPO.git".
type GiteaServer struct {
	// URL is the base URL, "http://127.0.0.1:PORT", without a trailing slash.
	URL string
	// User and Password are the admin user's credentials (basic auth).
	User, Password string
	// Token is an access token of User with every scope ("all"), for the
	// API ("Authorization: token TOKEN") and, as the password, for Git over
	// HTTP. Never log it.
	Token string
	// Dir is the server's work directory (app.ini, data, repositories).
	Dir string

	bin    string   // the gitea binary
	env    []string // environment of gitea commands
	conf   string   // app.ini
	client *http.Client
	log    *tailBuffer

	mu      sync.Mutex
	readers int // users made by Collaborator (ReadOnlyUser), numbering their names
}

// Gitea starts a Gitea server for t and returns it once its API answers.
//
// The binary is $PUBLISH_GITEA; when it is unset, or git is not installed,
// the test is skipped through Skip (a failure under
// PUBLISH_REQUIRE_INTEGRATION=1), and with -short it is skipped. In a temporary directory Gitea writes an app.ini
// (SQLite, install lock, offline mode, no mailer, no SSH, no indexers, no
// cron, in-memory queues, cache and sessions, warnings-only logging, a fast
// password hash), runs `gitea migrate`, creates the admin user with `gitea
// admin user create` and its token with `gitea admin user
// generate-access-token --scopes all`, then starts `gitea web` listening
// on a Unix socket in a temporary directory, which an in-process reverse
// proxy (httptest.NewServer, 127.0.0.1:0) serves as URL: no port is ever
// chosen, released and bound again. (Handing Gitea a bound TCP socket
// through systemd socket activation, LISTEN_FDS, makes it take itself for
// the new process of a graceful restart and SIGTERM its parent, the test.)
// Readiness is GET /api/v1/version through the proxy answering 200, polled
// until giteaStartTimeout.
//
// t.Cleanup stops the server with SIGTERM (SIGKILL after giteaStopTimeout)
// and waits for it; if the test failed, the tail of the server log is
// logged. Gitea refuses to run as root unless told it may:
// GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT=true and the app.ini key of the
// same name are set (the tests run as root in CI).
func Gitea(t testing.TB) *GiteaServer {
	t.Helper()
	Short(t, "starts a Gitea server")
	Require(t, "git", "git") // Gitea runs git for every repository operation
	bin := os.Getenv(GiteaEnv)
	if bin == "" {
		Skipf(t, "this test needs a Gitea server: %s=\"$(hack/gitea/build.sh)\" (builds gitea from its Go module, cached by version)", GiteaEnv)
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		t.Fatalf("testenv: %s=%s is not an executable file (%v); run hack/gitea/build.sh and set %s to the path it prints", GiteaEnv, bin, err, GiteaEnv)
	}
	static := filepath.Dir(bin)
	for _, d := range []string{"options", "templates"} {
		if st, err := os.Stat(filepath.Join(static, d)); err != nil || !st.IsDir() {
			t.Fatalf("testenv: %s: %s has no %s/ directory beside it (hack/gitea/build.sh copies it there): %v", GiteaEnv, bin, d, err)
		}
	}

	dir := t.TempDir()
	g := &GiteaServer{
		Dir:      dir,
		User:     "testadmin",
		Password: randomSecret(t),
		bin:      bin,
		conf:     filepath.Join(dir, "app.ini"),
		client:   &http.Client{Transport: &http.Transport{Proxy: nil}},
		log:      &tailBuffer{max: 40},
	}
	// GITEA_* variables override app.ini (GITEA__section__KEY) and GIT_*
	// ones would reach the server's git processes: keep both out.
	for _, kv := range environWithout("GITEA") {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "LISTEN_") && !strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
			g.env = append(g.env, kv)
		}
	}
	g.env = append(g.env, "GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT=true", "HOME="+filepath.Join(dir, "home"))

	// Gitea listens on a Unix socket (in a directory with a short name:
	// a socket path has at most 107 bytes) and the test process serves
	// URL on 127.0.0.1:0 in front of it; see giteaProxy.
	sockDir, err := os.MkdirTemp("", "gitea")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "http.sock")
	proxy := httptest.NewServer(giteaProxy(sock))
	t.Cleanup(proxy.Close) // after the server stopped (cleanups run last first)
	g.URL = proxy.URL

	if err := os.WriteFile(g.conf, []byte(giteaConfig(dir, static, sock, g.URL, randomSecret(t), randomSecret(t))), 0o600); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	g.run(t, "migrate")
	g.run(t, "admin", "user", "create", "--admin", "--username", g.User, "--password", g.Password,
		"--email", g.User+"@example.com", "--must-change-password=false")
	g.Token = strings.TrimSpace(g.run(t, "admin", "user", "generate-access-token", "--username", g.User,
		"--token-name", "testenv", "--scopes", "all", "--raw"))
	if g.Token == "" {
		t.Fatalf("testenv: gitea admin user generate-access-token printed no token")
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	cmd := exec.Command(bin, "web", "--config", g.conf, "--work-path", dir)
	cmd.Dir = dir
	cmd.Env = g.env
	cmd.Stdout, cmd.Stderr = pw, pw
	dieWithParent(cmd)
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		t.Fatalf("testenv: start %s web: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			g.log.add(sc.Text())
		}
		io.Copy(io.Discard, pr)
	}()
	started := false
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(giteaStopTimeout):
			cmd.Process.Kill()
			<-exited
		}
		<-readerDone
		if started && t.Failed() {
			t.Logf("gitea log tail:\n%s", g.log)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), giteaStartTimeout)
	defer cancel()
	if err := g.waitReady(ctx, exited); err != nil {
		cmd.Process.Kill() // if it still runs: the log tail is complete once it is gone
		<-exited
		<-readerDone
		t.Fatalf("testenv: gitea web: %v; log tail:\n%s", err, g.log)
	}
	started = true
	return g
}

// giteaProxy returns the reverse proxy that serves a Gitea server
// listening on the Unix socket sock over TCP: requests keep their Host
// (ROOT_URL's), answers are streamed (Git smart HTTP), and a request before
// the server listens gets 502 without a log line.
func giteaProxy(sock string) http.Handler {
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme = "http"
			r.Out.URL.Host = "gitea"
			r.Out.Host = r.In.Host
		},
		Transport:     tr,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "testenv gitea proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
}

// giteaConfig returns the app.ini of a test server in dir listening on the
// Unix socket sock and reached at rootURL, with options and templates read
// from static.
func giteaConfig(dir, static, sock, rootURL, secretKey, internalToken string) string {
	p := func(elem ...string) string { return filepath.Join(append([]string{dir}, elem...)...) }
	return `APP_NAME = testenv
RUN_MODE = prod
WORK_PATH = ` + dir + `
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true

[server]
PROTOCOL = http+unix
HTTP_ADDR = ` + sock + `
UNIX_SOCKET_PERMISSION = 600
DOMAIN = 127.0.0.1
ROOT_URL = ` + rootURL + `/
APP_DATA_PATH = ` + p("data") + `
STATIC_ROOT_PATH = ` + static + `
OFFLINE_MODE = true
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false
ENABLE_PPROF = false

[database]
DB_TYPE = sqlite3
PATH = ` + p("data", "gitea.db") + `

[repository]
ROOT = ` + p("repositories") + `
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = ` + secretKey + `
INTERNAL_TOKEN = ` + internalToken + `
PASSWORD_HASH_ALGO = pbkdf2$1000$16
PASSWORD_COMPLEXITY = off
MIN_PASSWORD_LENGTH = 8

[oauth2]
ENABLED = false

[service]
DISABLE_REGISTRATION = true
ENABLE_NOTIFY_MAIL = false
DEFAULT_KEEP_EMAIL_PRIVATE = true

[mailer]
ENABLED = false

[log]
MODE = console
LEVEL = warn
ROOT_PATH = ` + p("log") + `

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[queue]
TYPE = channel

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[picture]
DISABLE_GRAVATAR = true
ENABLE_FEDERATED_AVATAR = false

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[actions]
ENABLED = false

[packages]
ENABLED = false
`
}

// run runs `gitea ARGS --config app.ini --work-path DIR` to completion and
// returns its standard output; on failure it fails t with the output,
// which for the commands run here holds no secret but the admin password
// (in the arguments, not repeated in the message).
func (g *GiteaServer) run(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), giteaStartTimeout)
	defer cancel()
	full := append(append([]string(nil), args...), "--config", g.conf, "--work-path", g.Dir)
	cmd := exec.CommandContext(ctx, g.bin, full...)
	cmd.Dir = g.Dir
	cmd.Env = g.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("testenv: gitea %s: %v\n%s", strings.Join(args[:min(len(args), 3)], " "), err, lastLines(stderr.String()+stdout.String(), 30))
	}
	return stdout.String()
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitReady polls GET /api/v1/version until it answers 200, the server
// exits (exited closes) or ctx ends.
func (g *GiteaServer) waitReady(ctx context.Context, exited <-chan struct{}) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, g.URL+"/api/v1/version", nil)
		if err != nil {
			cancel()
			return err
		}
		resp, err := g.client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				cancel()
				return nil
			}
			err = fmt.Errorf("GET %s: %s", req.URL, resp.Status)
		}
		cancel()
		last = err
		select {
		case <-exited:
			return fmt.Errorf("exited before its API answered (last: %v)", last)
		case <-ctx.Done():
			return fmt.Errorf("API did not answer 200 within %v (last: %v)", giteaStartTimeout, last)
		case <-tick.C:
		}
	}
}

// APIError is a Gitea API answer with an unexpected status.
type APIError struct {
	Method, Path string
	// Status is the HTTP status code.
	Status int
	// Message is the "message" field of Gitea's JSON error, or the body.
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("gitea API %s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Message)
}

// Do sends an API request as the admin user (Token) and returns the
// status code; see DoToken.
func (g *GiteaServer) Do(ctx context.Context, method, path string, in, out any) (int, error) {
	return g.DoToken(ctx, g.Token, method, path, in, out)
}

// DoToken sends method to URL+"/api/v1"+path with "Authorization: token
// TOKEN" (none when token is ""), in as the JSON body (none when nil), and
// decodes a 2xx JSON answer into out (skipped when nil). It returns the
// status code, and an *APIError for a status outside 2xx.
func (g *GiteaServer) DoToken(ctx context.Context, token, method, path string, in, out any) (int, error) {
	return g.do(ctx, method, path, in, out, func(r *http.Request) {
		if token != "" {
			r.Header.Set("Authorization", "token "+token)
		}
	})
}

func (g *GiteaServer) do(ctx context.Context, method, path string, in, out any, auth func(*http.Request)) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, g.URL+"/api/v1"+path, body)
	if err != nil {
		return 0, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	auth(req)
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &APIError{Method: method, Path: path, Status: resp.StatusCode, Message: strings.TrimSpace(string(data))}
		var m struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &m) == nil && m.Message != "" {
			e.Message = m.Message
		}
		return resp.StatusCode, e
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("gitea API %s %s: decode answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// must is Do with a 30-second deadline that fails t on any error.
func (g *GiteaServer) must(t testing.TB, method, path string, in, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := g.Do(ctx, method, path, in, out); err != nil {
		t.Fatalf("testenv: %v", err)
	}
}

// RepoOptions configure CreateRepoWith.
type RepoOptions struct {
	// Name is the repository name (owner: the admin user).
	Name string
	// DefaultBranch is the repository's default branch, "" for the
	// server's (main).
	DefaultBranch string
	// AutoInit makes Gitea create a first commit (a README) on the default
	// branch; false leaves the repository empty for a first push.
	AutoInit bool
	// Private makes the repository private.
	Private bool
}

// CreateRepo creates the empty repository name owned by User (no first
// commit: the caller pushes one) and returns its HTTP clone URL,
// "http://127.0.0.1:PORT/USER/NAME.git", without credentials (see AuthURL).
// Any error fails t.
func (g *GiteaServer) CreateRepo(t testing.TB, name string) string {
	t.Helper()
	return g.CreateRepoWith(t, RepoOptions{Name: name})
}

// CreateRepoWith is CreateRepo with options (POST /user/repos).
func (g *GiteaServer) CreateRepoWith(t testing.TB, o RepoOptions) string {
	t.Helper()
	in := map[string]any{"name": o.Name, "auto_init": o.AutoInit, "private": o.Private}
	if o.DefaultBranch != "" {
		in["default_branch"] = o.DefaultBranch
	}
	var out struct {
		CloneURL string `json:"clone_url"`
	}
	g.must(t, http.MethodPost, "/user/repos", in, &out)
	if out.CloneURL == "" {
		t.Fatalf("testenv: gitea created repository %s without a clone_url", o.Name)
	}
	return out.CloneURL
}

// AuthURL returns the HTTP clone URL clone with User and Token as its
// userinfo, for git commands that take no separate credentials. The result
// holds the token: never log it. Go-git callers use &http.BasicAuth{
// Username: g.User, Password: g.Token} with the plain URL instead.
func (g *GiteaServer) AuthURL(clone string) string {
	u, err := url.Parse(clone)
	if err != nil {
		return clone
	}
	u.User = url.UserPassword(g.User, g.Token)
	return u.String()
}

// repoPath returns "OWNER/NAME" for repo, which is "OWNER/NAME" or a name
// owned by User.
func (g *GiteaServer) repoPath(repo string) string {
	if strings.Contains(repo, "/") {
		return repo
	}
	return g.User + "/" + repo
}

// Merge merges pull request number of repo ("NAME" owned by User, or
// "OWNER/NAME") through the API as a reviewer would (POST
// /repos/OWNER/NAME/pulls/NUMBER/merge, style "merge") and returns the
// merge commit's SHA. While Gitea is still checking the pull request's
// mergeability it answers 405 "try again later"; Merge polls until the
// merge is done or a minute has passed. Any other error fails t.
func (g *GiteaServer) Merge(t testing.TB, repo string, number int) string {
	t.Helper()
	path := fmt.Sprintf("/repos/%s/pulls/%d", g.repoPath(repo), number)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := g.Do(ctx, http.MethodPost, path+"/merge", map[string]any{"Do": "merge"}, nil)
		if err == nil {
			break
		}
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusMethodNotAllowed || !strings.Contains(strings.ToLower(ae.Message), "try again later") {
			t.Fatalf("testenv: merge pull request %s#%d: %v", g.repoPath(repo), number, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("testenv: merge pull request %s#%d: still not mergeable after a minute: %v", g.repoPath(repo), number, err)
		case <-tick.C:
		}
	}
	var pr struct {
		Merged         bool   `json:"merged"`
		MergeCommitSHA string `json:"merge_commit_sha"`
	}
	g.must(t, http.MethodGet, path, nil, &pr)
	if !pr.Merged {
		t.Fatalf("testenv: merge pull request %s#%d: the merge answered 200 but the pull request is not merged", g.repoPath(repo), number)
	}
	return pr.MergeCommitSHA
}

// ReadOnlyToken returns the token of ReadOnlyUser: a token without the
// rights to push or open a pull request on repo.
func (g *GiteaServer) ReadOnlyToken(t testing.TB, repo string) string {
	t.Helper()
	_, token := g.ReadOnlyUser(t, repo)
	return token
}

// ReadOnlyUser creates a new user (reader1, reader2, ...) with read access
// to repo ("NAME" owned by User, or "OWNER/NAME") as a collaborator, and
// returns its name and an access token of it with the scope read:repository
// only: with them one can clone and read the repository through the API,
// but a push is refused (403, the user may only read) and so is a pull
// request (403, the token lacks write:repository). Any error fails t.
func (g *GiteaServer) ReadOnlyUser(t testing.TB, repo string) (user, token string) {
	t.Helper()
	return g.Collaborator(t, repo, "read", "read:repository")
}

// Collaborator creates a new user (reader1, reader2, ... for permission
// "read", writer1, ... for "write", maintainer1, ... for "admin") that is a collaborator of repo
// ("NAME" owned by User, or "OWNER/NAME") with permission ("read",
// "write" or "admin"), and returns its name and an access token of it
// with the scope given ("read:repository", "write:repository"). A
// "write" collaborator with a "write:repository" token can review and
// approve a pull request of User's. Any error fails t.
func (g *GiteaServer) Collaborator(t testing.TB, repo, permission, scope string) (user, token string) {
	t.Helper()
	g.mu.Lock()
	g.readers++
	prefix := map[string]string{"read": "reader", "write": "writer", "admin": "maintainer"}[permission]
	name := fmt.Sprintf("%s%d", prefix, g.readers)
	g.mu.Unlock()
	password := randomSecret(t)
	g.must(t, http.MethodPost, "/admin/users", map[string]any{
		"username": name, "email": name + "@example.com", "password": password,
		"must_change_password": false, "send_notify": false,
	}, nil)
	g.must(t, http.MethodPut, "/repos/"+g.repoPath(repo)+"/collaborators/"+name, map[string]any{"permission": permission}, nil)
	// Tokens are created with the user's own basic auth.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var tok struct {
		SHA1 string `json:"sha1"`
	}
	_, err := g.do(ctx, http.MethodPost, "/users/"+name+"/tokens",
		map[string]any{"name": "publish-test", "scopes": []string{scope}}, &tok,
		func(r *http.Request) { r.SetBasicAuth(name, password) })
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if tok.SHA1 == "" {
		t.Fatalf("testenv: gitea created a token for %s but returned none", name)
	}
	return name, tok.SHA1
}

// WaitBranch waits until Gitea has processed a push that set branch of repo
// ("NAME" owned by User, or "OWNER/NAME") to the commit sha (hex), and
// fails t after a minute. Gitea takes a push in two steps: git receives it
// at once, and a queue updates the database afterwards (the branch table,
// and the repository's "empty" flag after its first push). Until then the
// API may not know the branch, or, for the first push into an empty
// repository, answer 500 (GET .../branches/NAME of Gitea 1.27.3 dereferences
// the Git repository it did not open for an empty one). WaitBranch polls
// GET /repos/OWNER/NAME and GET .../branches/BRANCH until the repository is
// not empty and the branch points at sha.
func (g *GiteaServer) WaitBranch(t testing.TB, repo, branch, sha string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	path := "/repos/" + g.repoPath(repo)
	var last string
	for {
		var r struct {
			Empty bool `json:"empty"`
		}
		var b struct {
			Commit struct {
				ID string `json:"id"`
			} `json:"commit"`
		}
		if _, err := g.Do(ctx, http.MethodGet, path, nil, &r); err != nil {
			last = err.Error()
		} else if r.Empty {
			last = "the repository is still empty"
		} else if _, err := g.Do(ctx, http.MethodGet, path+"/branches/"+url.PathEscape(branch), nil, &b); err != nil {
			last = err.Error()
		} else if b.Commit.ID != sha {
			last = "branch " + branch + " is at " + b.Commit.ID
		} else {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("testenv: gitea %s: branch %s did not reach %s within a minute (last: %s)", g.repoPath(repo), branch, sha, lastLines(last, 1))
		case <-tick.C:
		}
	}
}
