package mirror

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// fallbackHost has credentials in the docker config written by TestMain.
const (
	fallbackHost = "fallback.example.com"
	fallbackUser = "from-docker-config"
	fallbackPass = "docker-config-secret"
)

// TestMain points the docker config keychain (the fallback of the client's
// keychain) at a config of its own, so that the tests do not depend on, or
// send, the credentials of whoever runs them.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mirror-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg := map[string]any{"auths": map[string]any{
		fallbackHost: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(fallbackUser + ":" + fallbackPass))},
	}}
	data, _ := json.Marshal(cfg)
	dockerDir := filepath.Join(dir, "docker")
	if err := os.Mkdir(dockerDir, 0o700); err == nil {
		err = os.WriteFile(filepath.Join(dockerDir, "config.json"), data, 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for k, v := range map[string]string{
		"HOME":               dir,
		"DOCKER_CONFIG":      dockerDir,
		"XDG_CONFIG_HOME":    filepath.Join(dir, "config"),
		"XDG_RUNTIME_DIR":    filepath.Join(dir, "run"),
		"REGISTRY_AUTH_FILE": filepath.Join(dir, "no-auth.json"),
	} {
		os.Setenv(k, v)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testRegistry is an in-process registry on a loopback port.
type testRegistry struct {
	Host string
	srv  *httptest.Server

	mu       sync.Mutex
	requests []string // "METHOD path", in arrival order
	users    []string // basic-auth user names received ("" for none)
	opts     []remote.Option
}

type regOptions struct {
	user, pass string // require basic auth
	tls        bool
}

func startRegistry(t *testing.T, o regOptions) *testRegistry {
	t.Helper()
	r := &testRegistry{}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u, p, ok := req.BasicAuth()
		r.mu.Lock()
		r.requests = append(r.requests, req.Method+" "+req.URL.Path)
		r.users = append(r.users, u)
		r.mu.Unlock()
		if o.user != "" && (!ok || u != o.user || p != o.pass) {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, req)
	})
	if o.tls {
		r.srv = httptest.NewUnstartedServer(h)
		r.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // TLS handshake errors of the untrusting clients
		r.srv.StartTLS()
		r.opts = append(r.opts, remote.WithTransport(r.srv.Client().Transport))
	} else {
		r.srv = httptest.NewServer(h)
	}
	t.Cleanup(r.srv.Close)
	r.Host = strings.TrimPrefix(strings.TrimPrefix(r.srv.URL, "http://"), "https://")
	if o.user != "" {
		r.opts = append(r.opts, remote.WithAuth(&authn.Basic{Username: o.user, Password: o.pass}))
	}
	return r
}

// reset forgets the recorded requests.
func (r *testRegistry) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests, r.users = nil, nil
}

func (r *testRegistry) recorded() (requests, users []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...), append([]string(nil), r.users...)
}

func (r *testRegistry) ref(t *testing.T, s string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(r.Host + "/" + s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// pushImage writes a new random image to repo:tag of r and returns it.
func (r *testRegistry) pushImage(t *testing.T, s string) v1.Image {
	t.Helper()
	img, err := random.Image(256, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r.ref(t, s), img, r.opts...); err != nil {
		t.Fatalf("push %s: %v", s, err)
	}
	return img
}

// pushIndex writes a new random index of n images to s and returns it.
func (r *testRegistry) pushIndex(t *testing.T, s string, n int64) v1.ImageIndex {
	t.Helper()
	idx, err := random.Index(256, 2, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r.ref(t, s), idx, r.opts...); err != nil {
		t.Fatalf("push %s: %v", s, err)
	}
	return idx
}

func digestOf(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}
