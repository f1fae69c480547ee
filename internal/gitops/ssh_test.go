package gitops

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/operator-publish/publish/internal/testenv"
)

// sshServer is OpenSSH's sshd in the foreground (-D -e) with its own
// configuration, host key and authorized key, on a free loopback port.
type sshServer struct {
	port       int
	knownHosts string // a known_hosts file with the server's host key
	clientKey  []byte // OpenSSH private key the server accepts
	user       string
}

func startSSHD(t *testing.T) *sshServer {
	t.Helper()
	return startSSHDOn(t, func() int { return freeLoopbackPort(t) })
}

// startSSHDOn is startSSHD with the ports to try given by pick, one call
// per attempt.
func startSSHDOn(t *testing.T, pick func() int) *sshServer {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "sshd needs root for its privilege separation directory /run/sshd")
	}
	sshd := testenv.Require(t, "sshd", "openssh-server")
	testenv.Require(t, "git-receive-pack", "git")
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hostPub, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	clientPub, clientPriv, _ := ed25519.GenerateKey(rand.Reader)
	marshal := func(k ed25519.PrivateKey) []byte {
		b, err := ssh.MarshalPrivateKey(k, "")
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(b)
	}
	hostKey := filepath.Join(dir, "host_ed25519")
	os.WriteFile(hostKey, marshal(hostPriv), 0o600)
	cp, _ := ssh.NewPublicKey(clientPub)
	auth := filepath.Join(dir, "authorized_keys")
	os.WriteFile(auth, ssh.MarshalAuthorizedKey(cp), 0o600)

	// sshd cannot listen on port 0 and report the port it got, so it is
	// given a port that was free a moment ago and started again on a fresh
	// one when another process took that port first.
	var port int
	for attempt := 1; ; attempt++ {
		port = pick()
		cfg := filepath.Join(dir, "sshd_config")
		os.WriteFile(cfg, []byte(fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PidFile %s
AllowUsers %s
`, port, hostKey, auth, filepath.Join(dir, "sshd.pid"), u.Username)), 0o600)
		// sshd wants its privilege separation directory.
		os.MkdirAll("/run/sshd", 0o755)
		up, out := runSSHD(t, sshd, cfg)
		if up {
			break
		}
		if strings.Contains(out, "Address already in use") && attempt < maxPortAttempts {
			t.Logf("sshd: port %d was taken meanwhile; starting again on another (attempt %d)", port, attempt+1)
			continue
		}
		t.Fatalf("sshd did not start listening on 127.0.0.1:%d:\n%s", port, out)
	}
	hp, _ := ssh.NewPublicKey(hostPub)
	kh := filepath.Join(dir, "known_hosts")
	os.WriteFile(kh, []byte(fmt.Sprintf("[127.0.0.1]:%d %s", port, ssh.MarshalAuthorizedKey(hp))), 0o644)
	return &sshServer{port: port, knownHosts: kh, clientKey: marshal(clientPriv), user: u.Username}
}

// maxPortAttempts bounds how often a server that cannot listen on port 0
// is started again on a fresh port after losing its port to another
// process.
const maxPortAttempts = 20

// freeLoopbackPort returns a TCP port of 127.0.0.1 that was free when it
// was asked for. Another process may take it before the server binds it:
// callers start the server again on a fresh port when it reports the
// address in use.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// sshdLog collects what sshd writes and notices when it listens.
type sshdLog struct {
	mu        sync.Mutex
	buf       strings.Builder
	listening chan struct{}
	once      sync.Once
}

func (l *sshdLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if strings.Contains(l.buf.String(), "Server listening") {
		l.once.Do(func() { close(l.listening) })
	}
	return len(p), nil
}

func (l *sshdLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// runSSHD starts sshd in the foreground (-D -e) with the configuration cfg
// and waits until it logs that it listens (up: it is stopped at cleanup) or
// exits (not up; out is what it wrote, e.g. "Address already in use").
func runSSHD(t *testing.T, sshd, cfg string) (up bool, out string) {
	t.Helper()
	log := &sshdLog{listening: make(chan struct{})}
	cmd := exec.Command(sshd, "-D", "-e", "-f", cfg)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("sshd: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	select {
	case <-log.listening:
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-exited
			if t.Failed() {
				t.Logf("sshd log:\n%s", log.String())
			}
		})
		return true, ""
	case <-exited:
		return false, log.String()
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("sshd did not start within 30s:\n%s", log.String())
		return false, ""
	}
}

// TestSSHDPortTaken: when the port sshd is given was taken by another
// process meanwhile, sshd is started again on a fresh port, and serves.
func TestSSHDPortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy := taken.Addr().(*net.TCPAddr).Port
	var picks []int
	srv := startSSHDOn(t, func() int {
		p := busy
		if len(picks) > 0 {
			p = freeLoopbackPort(t)
		}
		picks = append(picks, p)
		return p
	})
	if len(picks) != 2 || srv.port == busy {
		t.Fatalf("ports tried %v, serving on %d: want the taken port %d, then a fresh one", picks, srv.port, busy)
	}
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", srv.port))
	if err != nil {
		t.Fatalf("sshd on its fresh port: %v", err)
	}
	c.Close()
}

// TestSSHPush clones and pushes over SSH with a key, checking the host key
// against known_hosts; a server key not in known_hosts is refused unless
// InsecureIgnoreHostKey is set.
func TestSSHPush(t *testing.T) {
	srv := startSSHD(t)
	gitBin := testenv.Require(t, "git", "git")
	bare := filepath.Join(t.TempDir(), "catalog.git")
	if out, err := exec.Command(gitBin, "init", "--quiet", "--bare", "--initial-branch=main", bare).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	url := fmt.Sprintf("ssh://%s@127.0.0.1:%d%s", srv.user, srv.port, bare)
	ctx := context.Background()
	o := Options{URL: url, SSHKey: srv.clientKey, KnownHostsFile: srv.knownHosts, Timeout: time.Minute}
	r, err := Clone(ctx, o)
	if err != nil {
		t.Fatalf("clone over SSH: %v", err)
	}
	defer r.Close()
	write(t, r.Dir, "a.yaml", "a\n")
	if _, err := r.Commit("over ssh", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(ctx); err != nil {
		t.Fatalf("push over SSH: %v", err)
	}
	r2, err := Clone(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if r2.Empty || files(t, r2.Dir)["a.yaml"] != "a\n" {
		t.Fatalf("the pushed commit is not in a new clone: %v", files(t, r2.Dir))
	}

	// Another host key in known_hosts: refused.
	otherPub, _, _ := ed25519.GenerateKey(rand.Reader)
	op, _ := ssh.NewPublicKey(otherPub)
	wrong := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(wrong, []byte(fmt.Sprintf("[127.0.0.1]:%d %s", srv.port, ssh.MarshalAuthorizedKey(op))), 0o644)
	bad := o
	bad.KnownHostsFile = wrong
	if r3, err := Clone(ctx, bad); err == nil {
		r3.Close()
		t.Fatal("a server whose host key differs from known_hosts was accepted")
	} else {
		t.Logf("wrong host key: %v", err)
	}
	bad.InsecureIgnoreHostKey = true
	r4, err := Clone(ctx, bad)
	if err != nil {
		t.Fatalf("--insecure-ignore-host-key: %v", err)
	}
	r4.Close()

	// No known_hosts anywhere: a clear error, before any connection.
	none := o
	none.KnownHostsFile = ""
	t.Setenv("SSH_KNOWN_HOSTS", filepath.Join(t.TempDir(), "missing"))
	if _, err := Clone(ctx, none); err == nil || !strings.Contains(err.Error(), "known_hosts") {
		t.Fatalf("no known_hosts: %v", err)
	}
}

func TestSSHURLs(t *testing.T) {
	for u, want := range map[string]bool{
		"git@github.com:org/catalog.git":      true,
		"ssh://git@host:2222/org/catalog.git": true,
		"deploy@host:catalog":                 true,
		"https://host/org/catalog.git":        false,
		"/tmp/catalog":                        false,
		"./catalog":                           false,
		"catalog":                             false,
	} {
		if got := isSSH(u); got != want {
			t.Errorf("isSSH(%q) = %v", u, got)
		}
	}
	if u := sshUser("ssh://deploy@host:22/x"); u != "deploy" {
		t.Errorf("user %q", u)
	}
	if u := sshUser("host:x"); u != "git" {
		t.Errorf("default user %q", u)
	}
}

// TestSSHInputClosedAfterExit shows the cause of go-git's "closing input:
// EOF" on a busy machine: sshd ends a session as soon as its command has
// exited, without waiting for the end of the client's input, and closing
// that input afterwards fails with io.EOF. git-upload-pack exits once it
// has sent the pack for the client's "done", so go-git, which closes its
// input after "done", gets that error when it is slower than the server.
func TestSSHInputClosedAfterExit(t *testing.T) {
	srv := startSSHD(t)
	signer, err := ssh.ParsePrivateKey(srv.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", srv.port), &ssh.ClientConfig{
		User: srv.user, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	in, err := s.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run("true"); err != nil {
		t.Fatalf("true over SSH: %v", err)
	}
	if err := in.Close(); !errors.Is(err, io.EOF) {
		t.Fatalf("closing the input of a session the server ended: %v, want io.EOF", err)
	}
}

// TestRetryEarlyClose: go-git's "closing input: EOF" gets a second
// attempt, which ends the matter; other errors and a second such error
// are returned.
func TestRetryEarlyClose(t *testing.T) {
	early := fmt.Errorf("closing input: %s", io.EOF)
	other := errors.New("authentication required")
	for _, c := range []struct {
		errs  []error
		want  error
		calls int
	}{
		{[]error{nil}, nil, 1},
		{[]error{early, nil}, nil, 2},
		{[]error{early, early}, early, 2},
		{[]error{other}, other, 1},
		{[]error{early, other}, other, 2},
	} {
		calls := 0
		err := RetryEarlyClose(func() error { calls++; return c.errs[calls-1] })
		if err != c.want || calls != c.calls {
			t.Errorf("errors %v: got %v after %d calls, want %v after %d", c.errs, err, calls, c.want, c.calls)
		}
	}
}
