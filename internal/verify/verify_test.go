package verify

import (
	"context"
	"github.com/google/go-containerregistry/pkg/authn"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/testenv"
)

// testRegistry is a registry under test: its host and remote options.
type testRegistry struct {
	host string
	// caFile, user and password reach the Debian registry (TLS, htpasswd);
	// empty for the in-process one (plain HTTP).
	caFile, user, password string
	opts                   []remote.Option
	requests               *atomic.Int64 // nil for the Debian registry
}

// inProcessRegistry is go-containerregistry's registry with the referrers
// API.
func inProcessRegistry(t *testing.T) testRegistry {
	var n atomic.Int64
	h := registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return testRegistry{host: strings.TrimPrefix(srv.URL, "http://"), requests: &n}
}

// debianRegistry is Debian's docker-registry 2.8 (TLS, htpasswd): no
// referrers API, so bundles are found through the referrers tag schema.
func debianRegistry(t *testing.T) testRegistry {
	r := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	return testRegistry{host: r.Host, opts: r.Options(), caFile: r.CAFile, user: r.Username, password: r.Password}
}

// loadPolicy writes publish.yaml with body (after apiVersion and kind) and
// the files, loads it and compiles the verifier.
func loadPolicy(t *testing.T, body string, files map[string]string) (*Verifier, *config.Config) {
	t.Helper()
	dir := t.TempDir()
	for n, c := range files {
		os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644)
	}
	p := filepath.Join(dir, config.FileName)
	os.WriteFile(p, []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\n"+body), 0o644)
	c, err := config.Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	v, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return v, c
}

// TestVerifyKey signs images at test time with a generated key, as a
// Sigstore bundle referrer and as a .sig tag, on both registries, and
// checks each verdict: accepted; tampered image, wrong key and missing
// signature rejected with their status.
func TestVerifyKey(t *testing.T) {
	for _, reg := range []struct {
		name string
		new  func(*testing.T) testRegistry
	}{{"in-process", inProcessRegistry}, {"docker-registry", debianRegistry}} {
		t.Run(reg.name, func(t *testing.T) {
			r := reg.new(t)
			good, other := newTestKey(t), newTestKey(t)
			v, _ := loadPolicy(t, "verify:\n- match: "+r.host+"/vendor/exempt\n  mode: off\n- match: "+r.host+"/vendor/**\n  key: vendor.pub\n- match: "+r.host+"/warned/*\n  mode: warn\n  key: vendor.pub\n", map[string]string{"vendor.pub": good.pem})
			ctx := context.Background()
			for _, form := range []string{"bundle", "sig-tag"} {
				sign := func(k testKey, repo name.Repository, d, signed v1.Hash) {
					if form == "bundle" {
						signBundle(t, k, repo, d, types.DockerManifestSchema2, r.opts)
						if d != signed { // the bundle of another digest, attached here
							signBundleOf(t, k, repo, d, signed, r.opts)
						}
						return
					}
					signSigTag(t, k, repo, d, signed, r.opts)
				}
				for _, tc := range []struct {
					name, want, found string
					setup             func(repo name.Repository, ref string) string
				}{
					{"signed", model.VerifyVerified, "key", func(repo name.Repository, ref string) string {
						d := pushRandom(t, ref, r.opts)
						sign(good, repo, d, d)
						return ref
					}},
					{"wrong key", model.VerifyUntrusted, "", func(repo name.Repository, ref string) string {
						d := pushRandom(t, ref, r.opts)
						sign(other, repo, d, d)
						return ref
					}},
					{"unsigned", model.VerifyUnsigned, "no signature", func(repo name.Repository, ref string) string {
						pushRandom(t, ref, r.opts)
						return ref
					}},
					{"tampered", model.VerifyUntrusted, "", func(repo name.Repository, ref string) string {
						// The signed image is replaced under its tag; the
						// signature of the old digest is copied to the new one.
						old := pushRandom(t, ref, r.opts)
						d := pushRandom(t, ref, r.opts)
						if form == "bundle" {
							signBundleOf(t, good, repo, d, old, r.opts)
						} else {
							signSigTag(t, good, repo, d, old, r.opts)
						}
						return ref
					}},
					{"tampered unsigned", model.VerifyUnsigned, "", func(repo name.Repository, ref string) string {
						old := pushRandom(t, ref, r.opts)
						sign(good, repo, old, old)
						pushRandom(t, ref, r.opts)
						return ref
					}},
				} {
					t.Run(form+"/"+tc.name, func(t *testing.T) {
						path := "vendor/" + strings.ReplaceAll(form+"-"+tc.name, " ", "-")
						repo, _ := name.NewRepository(r.host + "/" + path)
						ref := tc.setup(repo, repo.Tag("v1").String())
						got := v.Verify(ctx, ref, r.opts)
						if got.Status != tc.want || got.Mode != config.VerifyEnforce || !strings.Contains(got.Found, tc.found) || !strings.Contains(got.Expected, "vendor.pub") || got.Policy != "publish.yaml:6" {
							t.Fatalf("got %+v, want %s", got, tc.want)
						}
						if tc.want == model.VerifyVerified && got.Signature != form {
							t.Errorf("verified by %q, want %q", got.Signature, form)
						}
						if tc.want != model.VerifyVerified && !got.Failed() {
							t.Errorf("%+v: not Failed", got)
						}
						t.Logf("%s: %s", got.Status, got.Found)
					})
				}
			}
			// warn and off entries.
			ref := r.host + "/warned/app:v1"
			pushRandom(t, ref, r.opts)
			if got := v.Verify(ctx, ref, r.opts); got.Status != model.VerifyUnsigned || got.Mode != config.VerifyWarn || got.Policy != "publish.yaml:8" {
				t.Errorf("warn: %+v", got)
			}
			ref = r.host + "/vendor/exempt:v1"
			pushRandom(t, ref, r.opts)
			if got := v.Verify(ctx, ref, r.opts); got.Status != model.VerifyNotRequired || v.Covers(ref) {
				t.Errorf("off: %+v", got)
			}
			if got := v.Verify(ctx, r.host+"/elsewhere/app:v1", r.opts); got.Status != model.VerifyNotRequired {
				t.Errorf("no entry: %+v", got)
			}
			got := v.Verify(ctx, r.host+"/vendor/absent:v1", r.opts)
			if got.Status != model.VerifyUnsigned || !strings.Contains(got.Found, "could not be read") {
				t.Errorf("missing image: %+v", got)
			}
			if got.Err != nil {
				t.Errorf("a missing image is the image's problem, not the registry's: %v", got.Err)
			}
			if r.user != "" {
				// Refused credentials: no verdict on the image, the
				// registry's failure for the caller to report.
				bad := append(append([]remote.Option(nil), r.opts...), remote.WithAuth(&authn.Basic{Username: r.user, Password: "wrong"}))
				if got := v.Verify(ctx, r.host+"/warned/app:v1", bad); got.Err == nil {
					t.Errorf("wrong credentials: %+v, want the registry's error in Err", got)
				}
			}
		})
	}
}

// signBundleOf attaches to repo@at the bundle that signs the digest
// signed (a signature moved to another image).
func signBundleOf(t *testing.T, k testKey, repo name.Repository, at, signed v1.Hash, opts []remote.Option) {
	t.Helper()
	b := captureBundle(t, k, signed)
	attachBundleJSON(t, b, repo, at, types.DockerManifestSchema2, opts)
}

// captureBundle returns the JSON of a bundle signing digest with k.
func captureBundle(t *testing.T, k testKey, digest v1.Hash) []byte {
	t.Helper()
	var got []byte
	reg := inProcessRegistry(t)
	repo, _ := name.NewRepository(reg.host + "/capture")
	signBundle(t, k, repo, digest, types.DockerManifestSchema2, nil)
	idx, err := remote.Referrers(repo.Digest(digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	b, err := readBundle(repo, im.Manifests[0].Digest, remoteImages(nil))
	if err != nil {
		t.Fatal(err)
	}
	got, _ = b.MarshalJSON()
	return got
}

// TestVerifyIndex: with index own, the index's signature suffices; with
// index children, every platform child must be signed, and the verdict
// names the first that is not.
func TestVerifyIndex(t *testing.T) {
	r := inProcessRegistry(t)
	k := newTestKey(t)
	v, _ := loadPolicy(t, "verify:\n- match: "+r.host+"/own/*\n  key: k.pub\n- match: "+r.host+"/children/*\n  key: k.pub\n  index: children\n", map[string]string{"k.pub": k.pem})
	ctx := context.Background()
	for _, path := range []string{"own/app", "children/app", "children/all"} {
		idx, err := random.Index(128, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		repo, _ := name.NewRepository(r.host + "/" + path)
		if err := remote.WriteIndex(repo.Tag("v1"), idx); err != nil {
			t.Fatal(err)
		}
		d, _ := idx.Digest()
		signBundle(t, k, repo, d, types.OCIImageIndex, nil)
		if path == "children/all" {
			im, _ := idx.IndexManifest()
			for _, m := range im.Manifests {
				signSigTag(t, k, repo, m.Digest, m.Digest, nil)
			}
		}
	}
	if got := v.Verify(ctx, r.host+"/own/app:v1", nil); got.Status != model.VerifyVerified {
		t.Errorf("own: %+v", got)
	}
	if got := v.Verify(ctx, r.host+"/children/app:v1", nil); got.Status != model.VerifyUnsigned || !strings.Contains(got.Found, "child sha256:") {
		t.Errorf("children: %+v", got)
	}
	if got := v.Verify(ctx, r.host+"/children/all:v1", nil); got.Status != model.VerifyVerified || got.Signature != "sig-tag" {
		t.Errorf("children all signed: %+v", got)
	}
}

// TestVerifyCache: a digest is verified once per run; the second image
// naming the same digest asks the registry only for the manifest.
func TestVerifyCache(t *testing.T) {
	r := inProcessRegistry(t)
	k := newTestKey(t)
	v, _ := loadPolicy(t, "verify:\n- match: "+r.host+"/**\n  key: k.pub\n", map[string]string{"k.pub": k.pem})
	ref := r.host + "/app:v1"
	d := pushRandom(t, ref, nil)
	repo, _ := name.NewRepository(r.host + "/app")
	signBundle(t, k, repo, d, types.DockerManifestSchema2, nil)
	ctx := context.Background()
	if got := v.Verify(ctx, ref, nil); got.Status != model.VerifyVerified {
		t.Fatalf("%+v", got)
	}
	before := r.requests.Load()
	if got := v.Verify(ctx, repo.Digest(d.String()).String(), nil); got.Status != model.VerifyVerified {
		t.Fatalf("%+v", got)
	}
	if n := r.requests.Load() - before; n > 2 {
		t.Errorf("second verification of the same digest made %d requests, want 2 (the /v2/ ping and the manifest)", n)
	}
}

// TestNewErrors: a trusted root that is JSON but no Sigstore trusted root
// is an error at its publish.yaml line.
func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "root.json"), []byte(`{"mediaType":"nonsense"}`), 0o644)
	p := filepath.Join(dir, config.FileName)
	os.WriteFile(p, []byte("apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\nverify:\n- match: a/b\n  keyless: {issuer: i, subject: s}\n  trustedRoot: root.json\n"), 0o644)
	c, err := config.Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "publish.yaml:6: verify[0]: trustedRoot root.json does not parse") {
		t.Errorf("got %v", err)
	}
	if v, err := New(&config.Config{}); v != nil || err != nil {
		t.Errorf("no policy: %v %v", v, err)
	}
}
