package verify

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestArchiveCarriesSignatures: the bundle and the
// worker signed as Sigstore bundle referrers, the manager as a .sig tag,
// on go-containerregistry's registry (referrers API) and on Debian's
// docker-registry (the referrers tag schema). publish package carries the
// signatures in the archive, publish verify counts them, publish push puts
// them beside the images at the site, and the same key policy, pointed at
// the site's registry, verifies every image there. A second push finds them
// all present. publish run leaves the source's referrers at its
// destination too. With --signatures=false none travel.
func TestArchiveCarriesSignatures(t *testing.T) {
	for _, reg := range []struct {
		name string
		new  func(*testing.T) testRegistry
	}{{"in-process", inProcessRegistry}, {"docker-registry", debianRegistry}} {
		t.Run(reg.name, func(t *testing.T) {
			f := newPublishFixture(t, reg.new(t))
			for _, img := range []string{"bundle", "manager", "worker"} {
				f.sign(t, img)
			}
			ctx := context.Background()
			v := f.policy(t, "enforce")
			mo := f.options(v).Mirror
			out := filepath.Join(t.TempDir(), "signed.tgz")
			res, err := pipeline.Package(ctx, pipeline.PackageOptions{Source: f.source, Mirror: mo, Output: out, Verify: v})
			if err != nil {
				t.Fatal(err)
			}
			// bundle and worker: a referrer each (and, on the Debian
			// registry, the tag schema index listing it); manager: .sig.
			want := 3
			if f.src.requests == nil {
				want = 5
			}
			if res.Signatures != want {
				t.Errorf("archive: %d signatures, want %d: %+v", res.Signatures, want, res.Images)
			}
			vr, err := archive.Verify(out, archive.Limits{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			subjects := map[string]bool{}
			for _, im := range vr.Contents.Images {
				if im.Subject != "" {
					subjects[im.Subject] = true
				}
			}
			if len(subjects) != 3 {
				t.Errorf("signature subjects in the archive: %v", subjects)
			}

			// The site: a registry of the same kind, empty.
			site := f.siteRegistry(t, reg.name)
			push := func() *archive.PushResult {
				t.Helper()
				pr, err := pipeline.Push(ctx, pipeline.PushOptions{Archive: out, TempDir: t.TempDir(), Mirror: site.mirror})
				if err != nil {
					t.Fatal(err)
				}
				return pr.Push
			}
			pr := push()
			// Putting a referrer to a registry without the referrers API
			// writes its tag schema index (go-containerregistry does): the
			// same bytes as the archive's, found present when its turn comes.
			if pr.Signatures != want || pr.SignaturesPut != 3 || len(pr.Images) != 3 {
				t.Errorf("push: %d signatures (%d put), %d images", pr.Signatures, pr.SignaturesPut, len(pr.Images))
			}
			// Verified at the site by the same key.
			policy := filepath.Join(t.TempDir(), config.FileName)
			os.WriteFile(filepath.Join(filepath.Dir(policy), "vendor.pub"), []byte(f.key.pem), 0o644)
			os.WriteFile(policy, []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nverify:\n- match: "+site.host+"/site/**\n  key: vendor.pub\n"), 0o644)
			c, err := config.Load(policy, true)
			if err != nil {
				t.Fatal(err)
			}
			sv, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, img := range pr.Images {
				got := sv.Verify(ctx, img.Destination+"@"+img.Digest, site.opts)
				if got.Status != model.VerifyVerified {
					t.Errorf("at the site: %s: %+v", img.Destination, got)
				}
			}
			// The referrers at the site are the source's.
			for _, img := range []string{"bundle", "worker"} {
				src, _ := name.NewRepository(f.src.host + "/tiny/" + img)
				dst, _ := name.NewRepository(site.host + "/site/tiny/" + img)
				desc, err := remote.Get(src.Tag("v1.0.0"), f.src.opts...)
				if err != nil {
					t.Fatal(err)
				}
				if a, b := referrers(t, src.Digest(desc.Digest.String()), f.src.opts), referrers(t, dst.Digest(desc.Digest.String()), site.opts); !slices.Equal(a, b) || len(a) != 1 {
					t.Errorf("%s referrers: source %v, site %v", img, a, b)
				}
			}
			if again := push(); again.Signatures != want || again.SignaturesPut != 0 {
				t.Errorf("second push: %d signatures, %d put", again.Signatures, again.SignaturesPut)
			}

			// publish run: the destination has the source's referrers too.
			if _, err := pipeline.Run(ctx, f.options(v)); err != nil {
				t.Fatal(err)
			}
			for _, img := range []string{"bundle", "worker"} {
				src, _ := name.NewRepository(f.src.host + "/tiny/" + img)
				dst, _ := name.NewRepository(f.dst.host + "/mirror/tiny/" + img)
				desc, err := remote.Get(src.Tag("v1.0.0"), f.src.opts...)
				if err != nil {
					t.Fatal(err)
				}
				if a, b := referrers(t, src.Digest(desc.Digest.String()), f.src.opts), referrers(t, dst.Digest(desc.Digest.String()), nil); !slices.Equal(a, b) || len(a) != 1 {
					t.Errorf("run: %s referrers: source %v, destination %v", img, a, b)
				}
			}

			// --signatures=false: none in the archive.
			mo.SkipSignatures = true
			res, err = pipeline.Package(ctx, pipeline.PackageOptions{Source: f.source, Mirror: mo, Output: filepath.Join(t.TempDir(), "bare.tgz"), Verify: v})
			if err != nil {
				t.Fatal(err)
			}
			if res.Signatures != 0 || len(res.Images) != 3 {
				t.Errorf("--signatures=false: %d signatures, %d entries", res.Signatures, len(res.Images))
			}
		})
	}
}

// site is the air-gapped side's registry: where push puts the archive
// (under the prefix site/), with the options to read it.
type site struct {
	host   string
	mirror mirror.Options
	opts   []remote.Option
}

func (f *publishFixture) siteRegistry(t *testing.T, kind string) site {
	t.Helper()
	if kind == "in-process" {
		srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
		t.Cleanup(srv.Close)
		host := strings.TrimPrefix(srv.URL, "http://")
		return site{host: host, mirror: mirror.Options{DstRegistry: host + "/site", PlainHTTPHosts: []string{host}}}
	}
	r := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	return site{host: r.Host, opts: r.Options(), mirror: mirror.Options{DstRegistry: r.Host + "/site", CAFile: r.CAFile, Dst: mirror.Credentials{Username: r.Username, Password: r.Password}}}
}

// referrers lists the digests of the referrers of d (API or tag schema).
func referrers(t *testing.T, d name.Digest, opts []remote.Option) []string {
	t.Helper()
	idx, err := remote.Referrers(d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range im.Manifests {
		out = append(out, m.Digest.String())
	}
	slices.Sort(out)
	return out
}
