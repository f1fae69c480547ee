package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/testenv"
)

// planAgainst plans the fixture's source with dst (a real registry with TLS
// and htpasswd) as the destination, with the credentials creds, and no
// docker config to fall back on.
func planAgainst(t *testing.T, f *fixture, dst *testenv.Registry, creds mirror.Credentials) *report.Plan {
	t.Helper()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	o := PlanOptions{Options: Options{
		Source: f.source,
		Mirror: mirror.Options{
			DstRegistry: dst.Host + "/mirror", Dst: creds,
			CAFile: dst.CAFile, PlainHTTPHosts: []string{f.src},
		},
		Catalog: catalogOpts(f.catalog),
	}}
	p, err := PlanRun(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlanUnknownWithoutReadAccess: a plan with no credentials for the
// destination (the example CI plan job) counts every image as unknown,
// none as missing, says why for each image in the JSON, and says so in
// the Markdown headline and table, with what to do.
func TestPlanUnknownWithoutReadAccess(t *testing.T) {
	f := newFixture(t)
	dst := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	p := planAgainst(t, f, dst, mirror.Credentials{})
	s := p.Summary
	if s.ImagesToCopy == 0 || s.ImagesUnknown != s.ImagesToCopy || s.ImagesMissing != 0 {
		t.Fatalf("summary %+v: want every image unknown, none missing", s)
	}
	for _, a := range p.Artifacts {
		for _, v := range a.Versions {
			for _, i := range v.Images {
				if i.AtDestination != "unknown" || i.UnknownReason != "no read access (401)" {
					t.Errorf("%s: at destination %q, reason %q", i.Source, i.AtDestination, i.UnknownReason)
				}
			}
		}
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"imagesUnknown":6`, `"imagesMissing":0`, `"unknownReason":"no read access (401)"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("plan JSON lacks %s:\n%s", want, data)
		}
	}
	md := p.Markdown()
	for _, want := range []string{
		"6 images to mirror: 0 missing, 6 unknown at the destination (no read access (401): give the plan job read credentials for --dst-registry to know).",
		"| images (missing, unknown at destination) |",
		"| 6 (0, 6) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// TestPlanKnownWithReadAccess: the same plan with the destination's
// credentials knows every image (missing there: nothing was mirrored), and
// its Markdown reads as it always did.
func TestPlanKnownWithReadAccess(t *testing.T) {
	f := newFixture(t)
	dst := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	p := planAgainst(t, f, dst, mirror.Credentials{Username: dst.Username, Password: dst.Password})
	s := p.Summary
	if s.ImagesToCopy == 0 || s.ImagesUnknown != 0 || s.ImagesMissing != s.ImagesToCopy {
		t.Fatalf("summary %+v: want every image missing, none unknown", s)
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"imagesUnknown":0`) || strings.Contains(string(data), "unknownReason") {
		t.Errorf("plan JSON:\n%s", data)
	}
	md := p.Markdown()
	for _, want := range []string{"6 images to mirror, 6 missing at the destination.", "| images (missing at destination) |", "| 6 (6) |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "unknown") {
		t.Errorf("markdown speaks of unknown images:\n%s", md)
	}
}

// TestPlanUnknownReasons: the reason of an unknown image comes from the
// registry error's classification (the headline that counts them:
// internal/report's TestPlanUnknownHeadline).
func TestPlanUnknownReasons(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&transport.Error{StatusCode: http.StatusUnauthorized}, "no read access (401)"},
		{&transport.Error{StatusCode: http.StatusForbidden}, "denied (403)"},
		{&transport.Error{StatusCode: http.StatusBadRequest, Errors: []transport.Diagnostic{{Code: transport.DeniedErrorCode}}}, "denied (403)"},
		{&url.Error{Op: "Head", URL: "https://r.example/v2/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, "no answer: connection refused"},
		{fmt.Errorf("head: %w", context.DeadlineExceeded), "no answer: context deadline exceeded"},
		{errors.New(strings.Repeat("x", 200)), "no answer: " + strings.Repeat("x", maxReasonLen-1) + "…"},
	} {
		if got := unknownReason(c.err); got != c.want {
			t.Errorf("unknownReason(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestPlanMirroredUnknown: the plan of a run's pull request says why an
// image the mirror report lacks is unknown at the destination.
func TestPlanMirroredUnknown(t *testing.T) {
	const img = "src.example.com/team/op:1"
	v := model.NewVersions([]*manifest.PackageManifest{parseManifest(t, "packages/a/1.0.0/manifest.yaml", "a", "1.0.0", img)})[0]
	arts := []report.PlanArtifact{{Name: "a", Action: "listed", Versions: []report.PlanVersion{{Version: "1.0.0", Action: "added"}}}}
	planImages(arts, []*model.Version{v}, nil, mirroredAt(map[string]string{img: "dst.example.com/team/op:1"}))
	got := map[string]string{}
	for _, i := range arts[0].Versions[0].Images {
		got[i.Source] = i.AtDestination + "/" + i.UnknownReason
	}
	if len(got) != 2 || got[img] != "yes/" || got[v.Ref()] != "unknown/not in the mirror report" {
		t.Errorf("images: %v", got)
	}
}
