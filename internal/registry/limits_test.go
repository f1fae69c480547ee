package registry

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestManifestCapped: a registry that answers a manifest of more than
// 4 MiB (announced by Content-Length, or streamed without one) is refused
// with an error saying so, once (not retried); one within the cap is read.
func TestManifestCapped(t *testing.T) {
	var gets int
	small := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		gets++
		w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
		body := small
		if strings.Contains(r.URL.Path, "/big/") {
			body = small[:len(small)-1] + `,"annotations":{"x":"` + strings.Repeat("x", MaxManifestSize) + `"}}`
		}
		if strings.Contains(r.URL.Path, "/streamed/") {
			for i := 0; i < len(body); i += 1 << 16 {
				w.Write([]byte(body[i:min(i+1<<16, len(body))]))
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{PlainHTTP: true, Retry: RetryPolicy{Attempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	get := func(repo string) error {
		ref, err := name.ParseReference(host+"/"+repo+":v1", name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		_, err = remote.Get(ref, c.Options()...)
		return err
	}
	if err := get("ok/x"); err != nil {
		t.Fatalf("a small manifest: %v", err)
	}
	for _, repo := range []string{"big/x", "streamed/big/x"} {
		gets = 0
		err := get(repo)
		var pe *PermanentError
		if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), "over the limit of 4194304 bytes (4 MiB)") {
			t.Errorf("%s: err = %v, want the manifest refused as over 4 MiB", repo, err)
		}
		if gets != 1 {
			t.Errorf("%s: %d GETs, want 1 (not retried)", repo, gets)
		}
	}
}
