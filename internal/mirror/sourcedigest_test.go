package mirror

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	registry2 "github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/testenv"
)

// flipper flips the last byte of every blob body it passes on.
type flipper struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (f *flipper) Write(p []byte) (int, error) { return f.buf.Write(p) }

// TestSourceDigestMismatch: a source registry that serves a blob whose
// bytes are not its digest is named as the one at fault, not the
// destination the bytes were being written to ("cannot reach"), and is
// not tried again and again.
func TestSourceDigestMismatch(t *testing.T) {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			f := &flipper{ResponseWriter: w}
			inner.ServeHTTP(f, r)
			b := f.buf.Bytes()
			if len(b) > 0 {
				b[len(b)-1] ^= 0xff
			}
			w.Write(b)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	img, _ := random.Image(4096, 2)
	ref, _ := name.ParseReference(host + "/team/app:v1")
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	dst := testenv.StartRegistry(t, testenv.RegistryOptions{})
	c, err := New(Options{DstRegistry: dst.Host + "/m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Mirror(context.Background(), []string{host + "/team/app:v1"}, nil)
	var re *registry2.Error
	var dm *registry2.DigestMismatchError
	if !errors.As(err, &re) || !errors.As(err, &dm) {
		t.Fatalf("mirror: %v, want a *registry.Error holding a *registry.DigestMismatchError", err)
	}
	if re.Kind != registry2.KindDigestMismatch || re.Side != registry2.Source || re.Host != host || dm.Host != host {
		t.Errorf("kind %d, side %d, host %s, mismatch at %s: want the source %s", re.Kind, re.Side, re.Host, dm.Host, host)
	}
	if msg := err.Error(); strings.Contains(msg, "cannot reach") || !strings.Contains(msg, host+" served bytes that do not match their digest") || strings.Contains(msg, "gave up after") {
		t.Errorf("message: %s", msg)
	}
}
