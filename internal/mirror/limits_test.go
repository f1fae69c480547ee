package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/types"
)

// manifestServer serves raw manifests by tag or digest for any repository
// and counts the manifest GETs.
type manifestServer struct {
	mu    sync.Mutex
	byRef map[string][]byte
	gets  int
}

func (m *manifestServer) add(tag string, body []byte) string {
	s := sha256.Sum256(body)
	d := "sha256:" + hex.EncodeToString(s[:])
	m.byRef[d] = body
	if tag != "" {
		m.byRef[tag] = body
	}
	return d
}

func (m *manifestServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v2/" {
		return
	}
	_, ref, ok := strings.Cut(r.URL.Path, "/manifests/")
	m.mu.Lock()
	body, found := m.byRef[ref]
	if r.Method == http.MethodGet {
		m.gets++
	}
	m.mu.Unlock()
	if !ok || !found {
		http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"unknown"}]}`, http.StatusNotFound)
		return
	}
	s := sha256.Sum256(body)
	w.Header().Set("Content-Type", string(types.OCIImageIndex))
	w.Header().Set("Docker-Content-Digest", "sha256:"+hex.EncodeToString(s[:]))
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodGet {
		w.Write(body)
	}
}

func index(children ...string) []byte {
	var ms []map[string]any
	for _, c := range children {
		ms = append(ms, map[string]any{"mediaType": types.OCIImageIndex, "size": 2, "digest": c})
	}
	b, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": types.OCIImageIndex, "manifests": ms})
	return b
}

// TestIndexBounds: an index of more than MaxIndexChildren children, or
// indexes nested deeper than MaxIndexDepth, fail the image before any
// child is fetched (once, not retried).
func TestIndexBounds(t *testing.T) {
	src := &manifestServer{byRef: map[string][]byte{}}
	many := make([]string, MaxIndexChildren+1)
	for i := range many {
		many[i] = "sha256:" + fmt.Sprintf("%064x", i)
	}
	src.add("wide", index(many...))
	d := src.add("", index())
	for range MaxIndexDepth {
		d = src.add("", index(d))
	}
	src.add("deep", index(d))
	srv := httptest.NewServer(src)
	t.Cleanup(srv.Close)
	dst := startRegistry(t, regOptions{})
	host := strings.TrimPrefix(srv.URL, "http://")
	c, err := New(Options{DstRegistry: dst.Host + "/m", PlainHTTP: true, SkipSignatures: true})
	if err != nil {
		t.Fatal(err)
	}
	for tag, want := range map[string]string{
		"wide": fmt.Sprintf("lists %d manifests, over the limit of %d", MaxIndexChildren+1, MaxIndexChildren),
		"deep": fmt.Sprintf("nested %d indexes deep, over the limit of %d", MaxIndexDepth+1, MaxIndexDepth),
	} {
		src.mu.Lock()
		src.gets = 0
		src.mu.Unlock()
		_, err := c.Mirror(context.Background(), []string{host + "/a/b:" + tag}, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", tag, err, want)
		}
		src.mu.Lock()
		if tag == "wide" && src.gets > 1 {
			t.Errorf("wide: %d manifest GETs, want 1 (no child fetched, no retry)", src.gets)
		}
		src.mu.Unlock()
	}
}
