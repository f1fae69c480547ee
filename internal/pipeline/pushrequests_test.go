package pipeline

import (
	"net/http"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestPushRequests: a push of images into several repositories pings the
// destination once, not once per repository, and asks one HEAD per blob,
// in the first repository that needs it (what resumes a push), and one
// before each mount into another (go-containerregistry's), no other: a
// mount names the archive's size instead of asking it.
func TestPushRequests(t *testing.T) {
	f, out := severalArtifacts(t)
	proxy := testenv.StartFaultProxy(t, "http://"+f.dst, http.DefaultTransport, testenv.FaultOptions{})
	res, err := Push(t.Context(), PushOptions{
		Archive: out, Mirror: mirror.Options{DstRegistry: proxy.Host + "/site", PlainHTTP: true},
		TempDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	repos := map[string]bool{}
	for _, im := range res.Push.Images {
		repos[mustRef(t, im.Destination).Context().String()] = true
	}
	pings, heads := 0, 0
	for _, r := range proxy.Requests() {
		switch {
		case r.Method == http.MethodGet && r.Path == "/v2/":
			pings++
		case r.Method == http.MethodHead && strings.Contains(r.Path, "/blobs/"):
			heads++
		}
	}
	p := res.Push
	t.Logf("%d images in %d repositories: %d pings, %d blob HEADs; blobs %d pushed, %d mounted", len(p.Images), len(repos), pings, heads, p.BlobsPushed, p.BlobsMounted)
	if len(repos) < 2 || pings != 1 {
		t.Errorf("%d pings for %d repositories, want 1", pings, len(repos))
	}
	// Each blob was asked once before the uploads; go-containerregistry
	// asks once before each mount.
	if want := p.BlobsPushed + p.BlobsMounted; heads != want {
		t.Errorf("%d blob HEADs, want %d (one per blob, one per mount)", heads, want)
	}
}
