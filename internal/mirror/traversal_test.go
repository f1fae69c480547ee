package mirror

import (
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/testenv"
)

// normalisingProxy puts a reverse proxy in front of target that cleans
// every request path (path.Clean, keeping a final slash), as Harbor's and many ingress
// controllers do: /v2/team-a/src/../../team-b/x/... reaches the registry
// as /v2/team-b/x/....
func normalisingProxy(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.URL.Path = path.Clean(r.In.URL.Path)
		if strings.HasSuffix(r.In.URL.Path, "/") && r.Out.URL.Path != "/" {
			r.Out.URL.Path += "/" // .../blobs/uploads/ keeps its slash
		}
		r.Out.URL.RawPath = ""
		r.Out.Host = r.In.Host // the registry's upload locations name the proxy
	}}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestDotDotStaysInPrefix: a source repository with ".." components,
// mirrored to the Debian registry behind a path-normalising proxy, would
// land outside the --dst-registry prefix (team-a). Every reference is
// checked against the distribution grammar, so it is refused and nothing
// is written anywhere.
func TestDotDotStaysInPrefix(t *testing.T) {
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := normalisingProxy(t, reg.URL())
	src := startRegistry(t, regOptions{})
	src.pushImage(t, "src/../../team-b/x:v1")
	src.reset()

	c, err := New(Options{DstRegistry: proxy + "/team-a", PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Mirror(context.Background(), []string{src.Host + "/src/../../team-b/x:v1"}, nil)
	if _, herr := remote.Head(src.parse(t, reg.Ref("team-b/x:v1")), reg.Options()...); herr == nil {
		t.Fatalf("the image escaped the destination prefix: %s/team-b/x:v1 exists (mirror err = %v)", reg.Host, err)
	}
	if err == nil || !strings.Contains(err.Error(), `has a ".." path component`) {
		t.Fatalf("err = %v, want the reference refused for its \"..\" component", err)
	}
	if reqs, _ := src.recorded(); len(reqs) != 0 {
		t.Errorf("the source was asked %v for a refused reference", reqs)
	}
	// A clean reference still goes through the same proxy, below the prefix.
	src.pushImage(t, "src/team-b/x:v1")
	if _, err := c.Mirror(context.Background(), []string{src.Host + "/src/team-b/x:v1"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Head(src.parse(t, reg.Ref("team-a/src/team-b/x:v1")), reg.Options()...); err != nil {
		t.Fatalf("the clean reference did not arrive below the prefix: %v", err)
	}
}

// parse parses a full reference (on any host) or fails the test.
func (r *testRegistry) parse(t *testing.T, s string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}
