package mirror_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/testenv"
)

// TestCredentialHelper mirrors from a registry that wants the source
// credentials (flags) to one whose credentials come from a docker
// credential helper named in config.json (go-containerregistry's default
// keychain), both Debian docker-registry with htpasswd.
func TestCredentialHelper(t *testing.T) {
	srcReg := testenv.StartRegistry(t, testenv.RegistryOptions{Auth: true})
	dstReg := testenv.StartRegistry(t, testenv.RegistryOptions{Auth: true})
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustParse(t, srcReg.Ref("team/app:v1")), img, srcReg.Options()...); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	helper := filepath.Join(dir, "docker-credential-publishtest")
	secret, _ := json.Marshal(map[string]string{"ServerURL": dstReg.Host, "Username": dstReg.Username, "Secret": dstReg.Password})
	script := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = get ] || exit 1\nread host\n[ \"$host\" = %q ] || { echo 'credentials not found in native keychain'; exit 1; }\necho '%s'\n", dstReg.Host, secret)
	if err := os.WriteFile(helper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"credHelpers": map[string]string{dstReg.Host: "publishtest"}})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))

	src := Credentials{Username: srcReg.Username, Password: srcReg.Password}
	c, err := New(Options{DstRegistry: dstReg.Host + "/project", Src: src, SrcHosts: []string{srcReg.Host}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mirror(context.Background(), []string{srcReg.Ref("team/app:v1")}, nil); err != nil {
		t.Fatalf("with the credential helper: %v", err)
	}
	verifyCopy(t, srcReg.Host, srcReg.Options(), dstReg.Host, "project/", dstReg.Options(), "team/app:v1")

	// Without the helper the destination refuses: 401, naming the flags.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	c, err = New(Options{DstRegistry: dstReg.Host + "/other", Src: src, SrcHosts: []string{srcReg.Host}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Mirror(context.Background(), []string{srcReg.Ref("team/app:v1")}, nil)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "--dst-username") {
		t.Errorf("err = %v, want a 401 naming --dst-username", err)
	}
}

// TestInsecure: a TLS registry with a certificate nobody trusts fails
// without --ca-file (and is not retried); --insecure skips verification
// but keeps HTTPS.
func TestInsecure(t *testing.T) {
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustParse(t, reg.Ref("a/b:v1")), img, reg.Options()...); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{DstRegistry: reg.Host + "/m", Retry: RetryPolicy{Attempts: 5}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Mirror(context.Background(), []string{reg.Ref("a/b:v1")}, nil)
	var ie *ImageError
	if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), "--ca-file") {
		t.Fatalf("err = %v, want a TLS error naming --ca-file", err)
	}
	c, err = New(Options{DstRegistry: reg.Host + "/m", Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mirror(context.Background(), []string{reg.Ref("a/b:v1")}, nil); err != nil {
		t.Fatalf("--insecure: %v", err)
	}
	verifyCopy(t, reg.Host, reg.Options(), reg.Host, "m/", reg.Options(), "a/b:v1")
	// --ca-file works as well and is the better choice.
	c, err = New(Options{DstRegistry: reg.Host + "/n", CAFile: reg.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mirror(context.Background(), []string{reg.Ref("a/b:v1")}, nil); err != nil {
		t.Fatalf("--ca-file: %v", err)
	}
}

// TestIPv6NestedPrefix mirrors to and from IPv6 literal hosts ([::1]:PORT,
// proxies in front of Debian docker-registry), nested repository paths, and
// a destination prefix of two components (a Harbor project and a folder).
func TestIPv6NestedPrefix(t *testing.T) {
	srcReg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	dstReg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	src := testenv.StartFaultProxy(t, srcReg.URL(), srcReg.Transport(), testenv.FaultOptions{Listen: "[::1]:0"})
	dst := testenv.StartFaultProxy(t, dstReg.URL(), dstReg.Transport(), testenv.FaultOptions{Listen: "[::1]:0"})
	if !strings.HasPrefix(src.Host, "[::1]:") {
		t.Fatalf("proxy host %q", src.Host)
	}
	set := pushImageSet(t, srcReg.Host, srcReg.Options(), 6, 4<<10)
	var refs []string
	for _, r := range set.refs {
		refs = append(refs, src.Host+"/"+r)
	}
	c, err := New(Options{DstRegistry: dst.Host + "/project/ops-mirror"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Mirror(context.Background(), refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rep.Images {
		if want := dst.Host + "/project/ops-mirror/" + set.refs[i]; r.Destination != want {
			t.Errorf("destination %s, want %s", r.Destination, want)
		}
	}
	for _, r := range set.refs {
		verifyCopy(t, srcReg.Host, srcReg.Options(), dstReg.Host, "project/ops-mirror/", dstReg.Options(), r)
	}
}

// TestBearerAuth mirrors to a registry with token authentication (Harbor,
// Docker Hub, Quay work this way): the destination credentials are
// exchanged for a token once. With the scheme known (plain HTTP given) no
// /v2/ ping is sent; without, one.
func TestBearerAuth(t *testing.T) {
	src := startInProcess(t)
	inner := startInProcess(t)
	img, err := random.Image(2048, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustParse(t, src+"/a/b:v1"), img); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	counts := map[string]int{}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		switch {
		case r.URL.Path == "/token":
			counts["token"]++
		case r.URL.Path == "/v2/":
			counts["ping"]++
		}
		mu.Unlock()
		if r.URL.Path == "/token" {
			if u, p, ok := r.BasicAuth(); !ok || u != "robot" || p != "s3cret" {
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
				return
			}
			fmt.Fprint(w, `{"token":"tok-123"}`)
			return
		}
		if r.Header.Get("Authorization") != "Bearer tok-123" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="http://%s/token",service="test",scope="repository:x:pull"`, r.Host))
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
			return
		}
		r.URL.Scheme, r.URL.Host = "http", inner
		r.RequestURI = ""
		r.Header.Del("Authorization")
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(front.Close)
	host := strings.TrimPrefix(front.URL, "http://")
	creds := Credentials{Username: "robot", Password: "s3cret"}

	for _, plain := range []bool{true, false} {
		mu.Lock()
		clear(counts)
		mu.Unlock()
		o := Options{DstRegistry: host + "/harbor-project", Dst: creds}
		if plain {
			o.PlainHTTPHosts = []string{host}
		}
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Mirror(context.Background(), []string{src + "/a/b:v1"}, nil); err != nil {
			t.Fatalf("plain HTTP given %v: %v", plain, err)
		}
		mu.Lock()
		t.Logf("plain HTTP given %v: %v", plain, counts)
		wantPing := 1
		if plain {
			wantPing = 0
		}
		if counts["ping"] != wantPing || counts["token"] != 1 {
			t.Errorf("plain HTTP given %v: %d pings, %d token requests; want %d and 1", plain, counts["ping"], counts["token"], wantPing)
		}
		mu.Unlock()
	}
	verifyCopy(t, src, nil, inner, "harbor-project/", nil, "a/b:v1")

	c, err := New(Options{DstRegistry: host + "/p", Dst: Credentials{Username: "robot", Password: "wrong"}, PlainHTTPHosts: []string{host}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mirror(context.Background(), []string{src + "/a/b:v1"}, nil); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong password: %v, want a 401", err)
	}
}

// TestSignaturesAndReferrers copies what is attached to an image: an OCI
// referrer from a source with the referrers API (go-containerregistry's
// registry) to a destination without it (distribution 2.8, where the
// referrers tag schema index is kept), and cosign .sig/.att tags and a
// referrers tag index from a source without the API; --signatures=false
// copies none of them.
func TestSignaturesAndReferrers(t *testing.T) {
	dstReg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	t.Cleanup(srv.Close)
	withAPI := strings.TrimPrefix(srv.URL, "http://")
	plainReg := testenv.StartRegistry(t, testenv.RegistryOptions{})

	push := func(host string, opts []remote.Option, ref string) v1.Hash {
		img, err := random.Image(512, 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(mustParse(t, host+"/"+ref), img, opts...); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		return d
	}
	attach := func(host string, opts []remote.Option, repo string, subject v1.Hash) v1.Hash {
		art, err := random.Image(128, 1)
		if err != nil {
			t.Fatal(err)
		}
		art = mutate.MediaType(art, types.OCIManifestSchema1)
		art = mutate.ConfigMediaType(art, "application/vnd.example.sbom")
		ref := mutate.Subject(art, v1.Descriptor{MediaType: types.DockerManifestSchema2, Digest: subject, Size: 1}).(v1.Image)
		d, _ := ref.Digest()
		if err := remote.Write(mustParse(t, host+"/"+repo+"@"+d.String()), ref, opts...); err != nil {
			t.Fatal(err)
		}
		return d
	}

	// Source with the referrers API.
	subj := push(withAPI, nil, "team/app:v1")
	referrer := attach(withAPI, nil, "team/app", subj)
	// Source without it: cosign tags and the referrers tag schema.
	plainSubj := push(plainReg.Host, plainReg.Options(), "team/tool:v1")
	plainReferrer := attach(plainReg.Host, plainReg.Options(), "team/tool", plainSubj)
	tag := plainSubj.Algorithm + "-" + plainSubj.Hex
	push(plainReg.Host, plainReg.Options(), "team/tool:"+tag+".sig")
	push(plainReg.Host, plainReg.Options(), "team/tool:"+tag+".att")

	for _, sigs := range []bool{true, false} {
		prefix := map[bool]string{true: "with", false: "without"}[sigs]
		c, err := New(Options{DstRegistry: dstReg.Host + "/" + prefix, SkipSignatures: !sigs})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := c.Mirror(context.Background(), []string{withAPI + "/team/app:v1", plainReg.Host + "/team/tool:v1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantSigs := map[bool][2]int{true: {1, 3}, false: {0, 0}}[sigs]
		if rep.Images[0].Signatures != wantSigs[0] || rep.Images[1].Signatures != wantSigs[1] {
			t.Errorf("signatures %v: report %+v, want %v", sigs, rep.Images, wantSigs)
		}
		// A second mirror copies nothing and still names every signature
		// manifest at the destination: from the source without the API,
		// the .sig and .att tags, the referrers tag index and the
		// referrer it lists.
		wantDigests := map[bool][2]int{true: {1, 4}, false: {0, 0}}[sigs]
		again, err := c.Mirror(context.Background(), []string{withAPI + "/team/app:v1", plainReg.Host + "/team/tool:v1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range again.Images {
			if got := len(again.Images[i].SignatureDigests); got != wantDigests[i] || !slices.Equal(again.Images[i].SignatureDigests, rep.Images[i].SignatureDigests) {
				t.Errorf("signatures %v: the second mirror names %v, the first %v, want %d", sigs, again.Images[i].SignatureDigests, rep.Images[i].SignatureDigests, wantDigests[i])
			}
		}
		dst := dstReg.Host + "/" + prefix + "/team/"
		for ref, want := range map[string]bool{
			"app@" + referrer.String():       sigs,
			"tool@" + plainReferrer.String(): sigs,
			"tool:" + tag + ".sig":           sigs,
			"tool:" + tag + ".att":           sigs,
			"tool:" + tag:                    sigs,
		} {
			_, err := remote.Head(mustParse(t, dst+ref), dstReg.Options()...)
			if (err == nil) != want {
				t.Errorf("signatures %v: %s at the destination: %v, want present=%v", sigs, ref, err, want)
			}
		}
		if sigs {
			// The destination has no referrers API: the referrer is listed in
			// its referrers tag schema index.
			idx, err := remote.Referrers(mustParse(t, dst+"app@"+subj.String()).(name.Digest), dstReg.Options()...)
			if err != nil {
				t.Fatal(err)
			}
			im, _ := idx.IndexManifest()
			if len(im.Manifests) != 1 || im.Manifests[0].Digest != referrer {
				t.Errorf("referrers at the destination: %+v, want %s", im.Manifests, referrer)
			}
		}
	}
}
