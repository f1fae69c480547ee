package pipeline

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/operator-publish/publish/internal/mirror"
)

// TestSourceOnDestinationHostCredentials: the package repo's images live on
// the destination's host (reg/tiny/... mirrored to reg/mirror/...), which
// wants a user per side. lint, mirror, run, plan and package read every
// source with the source credentials and never send them for the
// destination, and the destination credentials only for it.
func TestSourceOnDestinationHostCredentials(t *testing.T) {
	users := map[string]string{"src-user": "src-pass", "dst-user": "dst-pass"}
	var mu sync.Mutex
	open := true // the fixture's own pushes, before the commands
	var wrong []string
	inner := registry.New(registry.Logger(nopLogger()))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		mu.Lock()
		setup := open
		if ok && (strings.HasPrefix(r.URL.Path, "/v2/tiny/") && u != "src-user" || strings.HasPrefix(r.URL.Path, "/v2/mirror/") && u != "dst-user") {
			wrong = append(wrong, u+" "+r.Method+" "+r.URL.Path)
		}
		mu.Unlock()
		if !setup && (!ok || users[u] != p) {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	f := newFixtureOn(t, host)
	mu.Lock()
	open = false
	mu.Unlock()
	mo := mirror.Options{
		DstRegistry: host + "/mirror", PlainHTTP: true, SrcHosts: []string{host},
		Src: mirror.Credentials{Username: "src-user", Password: "src-pass"},
		Dst: mirror.Credentials{Username: "dst-user", Password: "dst-pass"},
	}
	ctx := context.Background()
	steps := []struct {
		name string
		do   func() error
	}{
		{"lint", func() error { _, err := Lint(ctx, LintOptions{Source: f.source, Mirror: mo, Images: true}); return err }},
		{"mirror", func() error { _, err := Mirror(ctx, MirrorOptions{Source: f.source, Mirror: mo}); return err }},
		{"run", func() error {
			_, err := Run(ctx, Options{Source: f.source, Mirror: mo, Catalog: catalogOpts(f.catalog)})
			return err
		}},
		{"plan", func() error {
			_, err := PlanRun(ctx, PlanOptions{Options: Options{Source: f.source, Mirror: mo, Catalog: catalogOpts(f.catalog)}})
			return err
		}},
		{"package", func() error {
			_, err := Package(ctx, PackageOptions{Source: f.source, Output: filepath.Join(t.TempDir(), "ops.tgz"), Mirror: mo})
			return err
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
		mu.Lock()
		for _, w := range wrong {
			t.Errorf("%s: %s: the other side's user", s.name, w)
		}
		wrong = nil
		mu.Unlock()
	}
}

// newFixtureOn is newFixture with the source and the destination both on
// host.
func newFixtureOn(t *testing.T, host string) *fixture {
	t.Helper()
	f := &fixture{src: host, dst: host, source: t.TempDir(), catalog: t.TempDir()}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		f.pushVersion(t, v)
	}
	var err error
	if f.repo, err = git.PlainInit(f.source, false); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "add tiny")
	if _, err := git.PlainInit(f.catalog, true); err != nil {
		t.Fatal(err)
	}
	return f
}
