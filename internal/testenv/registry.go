package testenv

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/crypto/bcrypt"
)

// registryStartTimeout bounds how long StartRegistry waits for the registry
// to log that it is listening.
const registryStartTimeout = 20 * time.Second

// registryListening matches the line distribution 2.8 logs once its listener
// is bound, e.g.
//
//	level=info msg="listening on 127.0.0.1:33529" ...
//	level=info msg="listening on 127.0.0.1:33529, tls" ...
//
// The address is the bound one (ln.Addr()), so http.addr may use port 0.
var registryListening = regexp.MustCompile(`listening on (\S+?:\d+)\b`)

// RegistryOptions selects how StartRegistry configures the registry.
type RegistryOptions struct {
	// TLS serves HTTPS with a server certificate (IP 127.0.0.1, DNS
	// localhost) signed by a throw-away CA written to Registry.CAFile.
	// Without it the registry speaks plain HTTP.
	TLS bool
	// Auth requires HTTP basic auth (htpasswd, bcrypt) with the random
	// credentials in Registry.Username and Registry.Password.
	Auth bool
}

// Registry is a running docker-registry process started by StartRegistry.
// It is stopped by the test's cleanup.
type Registry struct {
	// Host is "127.0.0.1:PORT", the registry part of image references.
	Host string
	// CAFile is the PEM file of the CA that signed the server certificate,
	// or "" without TLS.
	CAFile string
	// Username and Password are the basic-auth credentials, or "" without
	// Auth.
	Username, Password string
	// Dir is the filesystem storage root of the registry.
	Dir string

	tls       bool
	transport *http.Transport
	log       *tailBuffer
	bin, cfg  string
}

// StartRegistry starts the Debian docker-registry binary (distribution 2.8)
// on a free loopback port with filesystem storage (deletes enabled) in a
// temporary directory, configured by opts, and waits until it serves /v2/.
// The process is killed and reaped by t.Cleanup; if the test failed, the tail
// of the registry log is logged then.
//
// If docker-registry is not installed the test is skipped (or fails, see
// Require). Any other start-up problem fails the test with the registry log
// tail in the message.
func StartRegistry(t testing.TB, opts RegistryOptions) *Registry {
	t.Helper()
	bin := Require(t, "docker-registry", "docker-registry")

	tmp := t.TempDir()
	r := &Registry{
		Dir: filepath.Join(tmp, "data"),
		tls: opts.TLS,
		log: &tailBuffer{max: 30},
	}
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: info
  formatter: text
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: 127.0.0.1:0
  secret: %s
`, strconv.Quote(r.Dir), randomSecret(t))

	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		r.transport = dt.Clone()
	} else {
		r.transport = &http.Transport{}
	}
	r.transport.Proxy = nil // loopback; never go through a proxy from the environment
	if opts.TLS {
		var certFile, keyFile string
		r.CAFile, certFile, keyFile = writeTestCerts(t, tmp)
		caPEM, err := os.ReadFile(r.CAFile)
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		r.transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		cfg += fmt.Sprintf("  tls:\n    certificate: %s\n    key: %s\n", strconv.Quote(certFile), strconv.Quote(keyFile))
	}
	if opts.Auth {
		r.Username, r.Password = "testuser", randomSecret(t)
		hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatalf("testenv: bcrypt: %v", err)
		}
		htpasswd := filepath.Join(tmp, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(r.Username+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatalf("testenv: %v", err)
		}
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: testenv\n    path: %s\n", strconv.Quote(htpasswd))
	}
	cfgFile := filepath.Join(tmp, "config.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	r.bin, r.cfg = bin, cfgFile

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	cmd := exec.Command(bin, "serve", cfgFile)
	cmd.Dir = tmp
	cmd.Stdout, cmd.Stderr = pw, pw
	// REGISTRY_* variables override the config file; keep them out.
	cmd.Env = environWithout("REGISTRY_")
	err = cmd.Start()
	pw.Close() // the child holds its own copy; EOF on pr means it is gone
	if err != nil {
		pr.Close()
		t.Fatalf("testenv: start %s: %v", bin, err)
	}

	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	readerDone := make(chan struct{})
	listening := make(chan string, 1)
	go func() {
		// Drain the log until EOF so the registry never blocks on a full
		// pipe; report the first "listening on" address.
		defer close(readerDone)
		defer pr.Close()
		br := bufio.NewReader(pr)
		found := false
		for {
			line, err := br.ReadString('\n')
			if line = strings.TrimRight(line, "\n"); line != "" {
				r.log.add(line)
				if m := registryListening.FindStringSubmatch(line); !found && m != nil {
					found = true
					listening <- m[1]
				}
			}
			if err != nil {
				io.Copy(io.Discard, br)
				return
			}
		}
	}()
	started := false
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		<-readerDone
		if started && t.Failed() { // start-up failures already carry the tail
			t.Logf("docker-registry log tail:\n%s", r.log)
		}
	})

	timer := time.NewTimer(registryStartTimeout)
	defer timer.Stop()
	select {
	case addr := <-listening:
		r.Host = addr
	case <-exited:
		<-readerDone
		t.Fatalf("testenv: docker-registry exited before listening (%v); log tail:\n%s", cmd.ProcessState, r.log)
	case <-timer.C:
		t.Fatalf("testenv: docker-registry did not log %q within %v; log tail:\n%s", "listening on", registryStartTimeout, r.log)
	}
	if host, _, err := net.SplitHostPort(r.Host); err != nil || host != "127.0.0.1" {
		t.Fatalf("testenv: docker-registry listens on unexpected address %q; log tail:\n%s", r.Host, r.log)
	}

	// Confirm with one request that this is our registry and it answers.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL()+"/v2/", nil)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	resp, err := r.Transport().RoundTrip(req)
	if err != nil {
		t.Fatalf("testenv: GET %s: %v; log tail:\n%s", req.URL, err, r.log)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("testenv: GET %s: %s; log tail:\n%s", req.URL, resp.Status, r.log)
	}
	started = true
	return r
}

// URL returns the registry base URL, "https://HOST" with TLS or
// "http://HOST" without, with no trailing slash.
func (r *Registry) URL() string {
	if r.tls {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// Ref returns the image reference Host + "/" + path, e.g. Ref("ns/app:v1").
func (r *Registry) Ref(path string) string {
	return r.Host + "/" + path
}

// Transport returns an HTTP transport that trusts CAFile (with TLS) and uses
// no proxy. It carries no credentials. The same transport is returned on
// every call; do not modify it.
func (r *Registry) Transport() http.RoundTripper {
	return r.transport
}

// Options returns go-containerregistry remote options for this registry: the
// basic-auth credentials (anonymous without Auth) and Transport(). Plain-HTTP
// registries on 127.0.0.1 need no name.Insecure: go-containerregistry falls
// back to http for loopback hosts.
func (r *Registry) Options() []remote.Option {
	var auth authn.Authenticator = authn.Anonymous
	if r.Username != "" {
		auth = &authn.Basic{Username: r.Username, Password: r.Password}
	}
	return []remote.Option{remote.WithAuth(auth), remote.WithTransport(r.transport)}
}

// Keychain returns a keychain with the basic-auth credentials for this
// registry's Host (anonymous without Auth, and for every other registry):
// for the APIs that take an authn.Keychain beside Options().
func (r *Registry) Keychain() authn.Keychain { return registryKeychain{r} }

type registryKeychain struct{ r *Registry }

func (k registryKeychain) Resolve(res authn.Resource) (authn.Authenticator, error) {
	if k.r.Username == "" || res.RegistryStr() != k.r.Host {
		return authn.Anonymous, nil
	}
	return &authn.Basic{Username: k.r.Username, Password: k.r.Password}, nil
}

// writeTestCerts writes a throw-away ECDSA CA and a server certificate for IP
// 127.0.0.1 (and ::1) and DNS localhost signed by it into dir, and returns
// the PEM file names.
func writeTestCerts(t testing.TB, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "testenv CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("testenv: CA certificate: %v", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatalf("testenv: server certificate: %v", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	write := func(name, typ string, der []byte, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), perm); err != nil {
			t.Fatalf("testenv: %v", err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER, 0o644),
		write("server.pem", "CERTIFICATE", der, 0o644),
		write("server-key.pem", "PRIVATE KEY", keyDER, 0o600)
}

// GarbageCollect runs the registry's own garbage collection on its
// storage (`docker-registry garbage-collect CONFIG`, without
// --delete-untagged), as an operator would after deletes, and returns its
// output; a failure fails the test. The registry keeps serving: the test
// must not push meanwhile.
func (r *Registry) GarbageCollect(t testing.TB) string {
	t.Helper()
	cmd := exec.Command(r.bin, "garbage-collect", r.cfg)
	cmd.Env = environWithout("REGISTRY_")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("testenv: docker-registry garbage-collect: %v\n%s", err, out)
	}
	return string(out)
}
