package mirror

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestSourceOnTheDestinationHost: a source image on the destination's host
// (reg/upstream/app mirrored to reg/mirror) is read with the source
// credentials and written with the destination's: no request for a
// source repository carries the destination user, and none for the
// destination the source user. The bundle and the check of a pushed
// digest go the same way.
func TestSourceOnTheDestinationHost(t *testing.T) {
	users := map[string]string{"src-user": "src-pass", "dst-user": "dst-pass"}
	var mu sync.Mutex
	var seen []string // "user path"
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		mu.Lock()
		seen = append(seen, u+" "+r.Method+" "+r.URL.Path)
		mu.Unlock()
		if !ok || users[u] != p {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(256, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"upstream/app:v1", "upstream/bundle:v1"} {
		ref, _ := name.ParseReference(host + "/" + s)
		if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: "src-user", Password: "src-pass"})); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	seen = nil
	mu.Unlock()
	c, err := New(Options{DstRegistry: host + "/mirror", SrcHosts: []string{host}, Src: Credentials{Username: "src-user", Password: "src-pass"}, Dst: Credentials{Username: "dst-user", Password: "dst-pass"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mirror(context.Background(), []string{host + "/upstream/app:v1"}, []string{host + "/upstream/bundle:v1"}); err != nil {
		t.Fatal(err)
	}
	src, _ := name.ParseReference(host + "/upstream/bundle:v1")
	if _, err := remote.Head(src, c.SrcOptions()...); err != nil {
		t.Fatalf("reading the source with SrcOptions: %v", err)
	}
	dst, _ := c.Destination(src)
	if _, err := remote.Head(dst, c.DstOptions()...); err != nil {
		t.Fatalf("reading the destination with DstOptions: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, s := range seen {
		u, rest, _ := strings.Cut(s, " ")
		switch {
		case u == "":
		case strings.Contains(rest, "/v2/upstream/") && u != "src-user",
			strings.Contains(rest, "/v2/mirror/") && u != "dst-user" && !strings.Contains(rest, "from=upstream"):
			t.Errorf("%s: sent by %s", rest, u)
		default:
			n++
		}
	}
	if n == 0 {
		t.Errorf("no authenticated request: %v", seen)
	}
}

// TestSourceOnTheDestinationHostHint: a source on the destination's host
// that refuses the source credentials is told as the source's failure,
// naming --src-username, not the destination's flags.
func TestSourceOnTheDestinationHostHint(t *testing.T) {
	r := startRegistry(t, regOptions{user: "dst-user", pass: "dst-pass"})
	r.pushImage(t, "upstream/app:v1")
	c, err := New(Options{DstRegistry: r.Host + "/mirror", SrcHosts: []string{r.Host}, Src: Credentials{Username: "src-user", Password: "wrong"}, Dst: Credentials{Username: "dst-user", Password: "dst-pass"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Mirror(context.Background(), []string{r.Host + "/upstream/app:v1"}, nil)
	if err == nil || !strings.Contains(err.Error(), "--src-username") || strings.Contains(err.Error(), "--dst-username") {
		t.Errorf("err = %v, want the source's 401 naming --src-username", err)
	}
}
