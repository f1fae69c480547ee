package verify

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/pipeline"
	reg "github.com/operator-publish/publish/internal/registry"
)

// TestPipelineVerifySourceMirror: the signed images and their signatures
// are copied to a central mirror and the source registry is stopped; run
// with --source-mirror verifies each image at the copy under the policy
// entry of its original name, and publishes.
func TestPipelineVerifySourceMirror(t *testing.T) {
	srcSrv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srcSrv.Close)
	f := newPublishFixture(t, testRegistry{host: strings.TrimPrefix(srcSrv.URL, "http://")})
	for _, img := range []string{"bundle", "manager", "worker"} {
		f.sign(t, img)
	}
	central := inProcessRegistry(t)
	ctx := context.Background()
	mc, err := mirror.New(mirror.Options{DstRegistry: central.host + "/vetted", PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	ref := func(img string) string { return f.src.host + "/tiny/" + img + ":v1.0.0" }
	if _, err := mc.Mirror(ctx, []string{ref("manager"), ref("worker")}, []string{ref("bundle")}); err != nil {
		t.Fatal(err)
	}
	srcSrv.Close()

	o := f.options(f.policy(t, "enforce"))
	o.Mirror.PlainHTTPHosts = append(o.Mirror.PlainHTTPHosts, central.host)
	o.Mirror.SourceMirrors = []reg.SourceMirror{{From: f.src.host, To: central.host + "/vetted"}}
	res, err := pipeline.Run(ctx, o)
	if err != nil {
		t.Fatalf("run from the central mirror: %v", err)
	}
	for _, img := range []string{"bundle", "manager", "worker"} {
		if r := res.Verified[ref(img)]; r.Status != model.VerifyVerified || r.Policy == "" {
			t.Errorf("%s: %+v", img, r)
		}
	}
	if !f.committed(t) {
		t.Error("nothing committed")
	}
}
