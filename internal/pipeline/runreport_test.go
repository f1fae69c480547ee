package pipeline

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestRunPartialFailureReport: a run in which two bundle images cannot be
// pushed (the destination denies their tags, through a fault proxy) fails,
// commits nothing, and its image report names exactly those two as failed,
// with the destination's reason, and every other image as copied; the next
// run, with the destination healthy again, copies only the two and
// commits.
func TestRunPartialFailureReport(t *testing.T) {
	f := newFixture(t)
	for _, v := range []string{"1.2.0", "1.3.0", "1.4.0", "1.5.0"} {
		f.pushVersion(t, v)
	}
	f.commit(t, "six versions")
	var deny atomic.Bool
	deny.Store(true)
	failing := []string{"/v2/mirror/tiny/bundle/manifests/v1.2.0", "/v2/mirror/tiny/bundle/manifests/v1.4.0"}
	proxy := testenv.StartFaultProxy(t, "http://"+f.dst, http.DefaultTransport, testenv.FaultOptions{Status: func(r *http.Request) int {
		if deny.Load() && r.Method == http.MethodPut && (r.URL.Path == failing[0] || r.URL.Path == failing[1]) {
			return http.StatusForbidden
		}
		return 0
	}})
	opts := Options{
		Source:  f.source,
		Mirror:  mirror.Options{DstRegistry: proxy.Host + "/mirror", PlainHTTP: true},
		Catalog: catalogOpts(f.catalog),
	}
	res, err := Run(context.Background(), opts)
	if err == nil {
		t.Fatal("run with two images denied succeeded")
	}
	if repo, _ := git.PlainOpen(f.catalog); repo != nil {
		if _, rerr := repo.Reference("refs/heads/main", true); rerr == nil {
			t.Fatal("a failed run committed to the catalog")
		}
	}
	if res == nil || res.Mirror == nil {
		t.Fatalf("no mirror report with the error %v", err)
	}
	r := report.New("run")
	r.AddMirror(res.Mirror, ImageErrors(err))
	// Six versions: a bundle, a manager and a worker each.
	if want := (report.Summary{Images: 18, Copied: 16, Failed: 2}); r.Summary != want {
		t.Fatalf("summary %+v, want %+v\n%+v", r.Summary, want, r.Images)
	}
	for _, img := range r.Images {
		switch img.State {
		case report.Failed:
			if !strings.HasSuffix(img.Source, "/tiny/bundle:v1.2.0") && !strings.HasSuffix(img.Source, "/tiny/bundle:v1.4.0") {
				t.Errorf("failed in the report: %s, want only the bundles v1.2.0 and v1.4.0", img.Source)
			}
			if !strings.Contains(img.Error, "403") || img.Input {
				t.Errorf("%s: error %q (input %v), want the destination's 403, not an input error", img.Source, img.Error, img.Input)
			}
		case report.Copied:
			if !strings.HasPrefix(img.Digest, "sha256:") || !strings.HasPrefix(img.Destination, proxy.Host+"/mirror/") {
				t.Errorf("copied image in the report: %+v", img)
			}
		}
	}

	deny.Store(false)
	res, err = Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if res.Mirror.Copied() != 2 || len(res.Mirror.Images) != 18 || res.Commit == "" {
		t.Errorf("rerun copied %d of %d images, commit %q; want the two that failed, and a commit", res.Mirror.Copied(), len(res.Mirror.Images), res.Commit)
	}
}

// TestRunReportPendingBundles: when a related image fails, the bundles
// are never tried (a bundle goes after the images it deploys); the report
// lists each of them as pending, not as copied nor as silently absent.
func TestRunReportPendingBundles(t *testing.T) {
	f := newFixture(t)
	proxy := testenv.StartFaultProxy(t, "http://"+f.dst, http.DefaultTransport, testenv.FaultOptions{Status: func(r *http.Request) int {
		if r.Method == http.MethodPut && r.URL.Path == "/v2/mirror/tiny/worker/manifests/v1.1.0" {
			return http.StatusForbidden
		}
		return 0
	}})
	res, err := Run(context.Background(), Options{
		Source:  f.source,
		Mirror:  mirror.Options{DstRegistry: proxy.Host + "/mirror", PlainHTTP: true},
		Catalog: catalogOpts(f.catalog),
	})
	if err == nil || res == nil || res.Mirror == nil {
		t.Fatalf("run: %v (result %v), want a failure with its mirror report", err, res)
	}
	r := report.New("run")
	r.AddMirror(res.Mirror, ImageErrors(err))
	if want := (report.Summary{Images: 6, Copied: 3, Failed: 1, Pending: 2}); r.Summary != want {
		t.Fatalf("summary %+v, want %+v\n%+v", r.Summary, want, r.Images)
	}
	for _, img := range r.Images {
		if img.State == report.Pending && !strings.Contains(img.Source, "/tiny/bundle:") {
			t.Errorf("pending: %s, want only bundles", img.Source)
		}
	}
}
