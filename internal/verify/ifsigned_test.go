package verify

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/testenv"
)

// The artifact types of the SBOM and VEX referrers of the tests: SPDX's
// registered media type, and the one tools give OpenVEX documents (the
// OpenVEX specification names none).
const (
	spdxArtifactType    = "application/spdx+json"
	openVEXArtifactType = "application/vnd.openvex+json"
)

// TestVerifyIfSigned: under mode if-signed, on both registries, an image
// signed with the policy's key is verified; an image with no signature
// at all (also one with only an SBOM and a VEX referrer: those sign
// nothing) is unsigned with NoSignature and does not fail; an image
// signed with a foreign key (bundle or .sig tag) is untrusted and fails;
// an image that does not exist fails. The same unsigned image fails
// under enforce.
func TestVerifyIfSigned(t *testing.T) {
	for _, reg := range []struct {
		name string
		new  func(*testing.T) testRegistry
	}{{"in-process", inProcessRegistry}, {"docker-registry", debianRegistry}} {
		t.Run(reg.name, func(t *testing.T) {
			r := reg.new(t)
			good, foreign := newTestKey(t), newTestKey(t)
			v, _ := loadPolicy(t, "verify:\n- match: "+r.host+"/strict/*\n  key: vendor.pub\n- match: "+r.host+"/vendor/*\n  mode: if-signed\n  key: vendor.pub\n", map[string]string{"vendor.pub": good.pem})
			ctx := context.Background()
			push := func(path string) (name.Repository, v1.Hash) {
				repo, _ := name.NewRepository(r.host + "/" + path)
				return repo, pushRandom(t, repo.Tag("v1").String(), r.opts)
			}
			for _, tc := range []struct {
				name, status, found string
				noSignature, failed bool
				setup               func(repo name.Repository, d v1.Hash)
			}{
				{"signed bundle", model.VerifyVerified, "key", false, false, func(repo name.Repository, d v1.Hash) {
					signBundle(t, good, repo, d, types.DockerManifestSchema2, r.opts)
				}},
				{"signed sig-tag", model.VerifyVerified, "key", false, false, func(repo name.Repository, d v1.Hash) {
					signSigTag(t, good, repo, d, d, r.opts)
				}},
				{"unsigned", model.VerifyUnsigned, "no signature", true, false, func(name.Repository, v1.Hash) {}},
				{"sbom and vex only", model.VerifyUnsigned, "no signature", true, false, func(repo name.Repository, d v1.Hash) {
					testenv.AttachReferrer(t, repo, v1.Descriptor{Digest: d, MediaType: types.DockerManifestSchema2, Size: 1}, spdxArtifactType, nil, r.opts...) // an empty SBOM
					testenv.AttachReferrer(t, repo, v1.Descriptor{Digest: d, MediaType: types.DockerManifestSchema2, Size: 1}, openVEXArtifactType, []byte(`{"@context":"https://openvex.dev/ns/v0.2.0","statements":[]}`), r.opts...)
				}},
				{"foreign bundle", model.VerifyUntrusted, "", false, true, func(repo name.Repository, d v1.Hash) {
					signBundle(t, foreign, repo, d, types.DockerManifestSchema2, r.opts)
				}},
				{"foreign sig-tag", model.VerifyUntrusted, "does not verify with the policy's key", false, true, func(repo name.Repository, d v1.Hash) {
					signSigTag(t, foreign, repo, d, d, r.opts)
				}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					repo, d := push("vendor/" + strings.ReplaceAll(tc.name, " ", "-"))
					tc.setup(repo, d)
					got := v.Verify(ctx, repo.Tag("v1").String(), r.opts)
					if got.Status != tc.status || got.NoSignature != tc.noSignature || got.Failed() != tc.failed || got.Err != nil || got.Mode != config.VerifyIfSigned || !strings.Contains(got.Found, tc.found) {
						t.Fatalf("got %+v (Failed %v), want %s", got, got.Failed(), tc.status)
					}
					t.Logf("%s: %s", got.Status, got.Found)
				})
			}
			// A missing image: the image's problem, a failure.
			got := v.Verify(ctx, r.host+"/vendor/absent:v1", r.opts)
			if got.Status != model.VerifyUnsigned || got.NoSignature || !got.Failed() || got.Err != nil || got.Outcome() != model.OutcomeFailed {
				t.Errorf("missing image: %+v", got)
			}
			// enforce: the same unsigned image fails.
			_, _ = push("strict/unsigned")
			if got := v.Verify(ctx, r.host+"/strict/unsigned:v1", r.opts); !got.NoSignature || !got.Failed() || got.Outcome() != model.OutcomeUnsigned {
				t.Errorf("enforce, unsigned: %+v", got)
			}
		})
	}
}

// TestVerifyIfSignedIndex: with index children under if-signed, an index
// none of whose platforms is signed is unsigned (accepted); one signed
// on some platforms only fails, naming the unsigned platform.
func TestVerifyIfSignedIndex(t *testing.T) {
	r := inProcessRegistry(t)
	k := newTestKey(t)
	v, _ := loadPolicy(t, "verify:\n- match: "+r.host+"/**\n  mode: if-signed\n  key: k.pub\n  index: children\n", map[string]string{"k.pub": k.pem})
	for _, path := range []string{"none", "part"} {
		idx, err := random.Index(128, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		repo, _ := name.NewRepository(r.host + "/" + path)
		if err := remote.WriteIndex(repo.Tag("v1"), idx); err != nil {
			t.Fatal(err)
		}
		if path == "part" {
			im, _ := idx.IndexManifest()
			signSigTag(t, k, repo, im.Manifests[0].Digest, im.Manifests[0].Digest, nil)
		}
	}
	ctx := context.Background()
	if got := v.Verify(ctx, r.host+"/none:v1", nil); !got.NoSignature || got.Failed() {
		t.Errorf("no platform signed: %+v", got)
	}
	if got := v.Verify(ctx, r.host+"/part:v1", nil); got.Status != model.VerifyUnsigned || got.NoSignature || !got.Failed() || !strings.Contains(got.Found, "(signed: 1 of the 2 platforms; index: children wants every one signed)") {
		t.Errorf("one platform of two signed: %+v", got)
	}
}

// TestVerifyIfSignedRegistryFailure: a registry that refuses the manifest
// of a signature (403) gives no verdict under if-signed, even beside a
// .sig tag of a foreign key: the failure is in Err (the run stops with
// it), never an unsigned image accepted nor an untrusted one.
func TestVerifyIfSignedRegistryFailure(t *testing.T) {
	r := inProcessRegistry(t)
	good, foreign := newTestKey(t), newTestKey(t)
	repo, _ := name.NewRepository(r.host + "/vendor/app")
	d := pushRandom(t, repo.Tag("v1").String(), nil)
	signBundle(t, good, repo, d, types.DockerManifestSchema2, nil)
	signSigTag(t, foreign, repo, d, d, nil)
	idx, err := remote.Referrers(repo.Digest(d.String()))
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	bundle := im.Manifests[0].Digest.String()
	var refuse atomic.Bool
	refuse.Store(true)
	proxy := testenv.StartFaultProxy(t, "http://"+r.host, http.DefaultTransport, testenv.FaultOptions{Status: func(req *http.Request) int {
		if refuse.Load() && strings.HasSuffix(req.URL.Path, "/manifests/"+bundle) {
			return http.StatusForbidden
		}
		return 0
	}})
	v, _ := loadPolicy(t, "verify:\n- match: "+proxy.Host+"/vendor/*\n  mode: if-signed\n  key: k.pub\n", map[string]string{"k.pub": good.pem})
	got := v.Verify(context.Background(), proxy.Host+"/vendor/app:v1", nil)
	if got.Err == nil || got.NoSignature || got.Outcome() != "" || !strings.Contains(got.Found, "signatures could not be read: bundle") {
		t.Errorf("got %+v, want the registry's failure in Err", got)
	}
	// Without the fault the bundle verifies.
	refuse.Store(false)
	v, _ = loadPolicy(t, "verify:\n- match: "+proxy.Host+"/vendor/*\n  mode: if-signed\n  key: k.pub\n", map[string]string{"k.pub": good.pem})
	if got := v.Verify(context.Background(), proxy.Host+"/vendor/app:v1", nil); got.Status != model.VerifyVerified {
		t.Errorf("without the fault: %+v", got)
	}
}
