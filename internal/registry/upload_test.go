package registry_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/testenv"
)

// sent is one request a recordingTransport passed on, with its answer.
type sent struct {
	method, path, query string
	status              int
	body                io.ReadCloser // the request body as the transport got it
	getBody             bool          // GetBody was set
	contentLength       int64
	contentType         string
}

// recordingTransport records every request (below the authentication)
// and passes it on; pings (GET /v2/) are counted.
type recordingTransport struct {
	inner http.RoundTripper
	mu    sync.Mutex
	reqs  []sent
	pings int
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/v2/" {
		r.mu.Lock()
		r.pings++
		r.mu.Unlock()
		return r.inner.RoundTrip(req)
	}
	s := sent{method: req.Method, path: req.URL.Path, query: req.URL.RawQuery, body: req.Body, getBody: req.GetBody != nil,
		contentLength: req.ContentLength, contentType: req.Header.Get("Content-Type")}
	resp, err := r.inner.RoundTrip(req)
	if err == nil {
		s.status = resp.StatusCode
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, s)
	r.mu.Unlock()
	return resp, err
}

// take returns the requests recorded since the last call.
func (r *recordingTransport) take() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reqs
	r.reqs = nil
	return out
}

func (r *recordingTransport) pingCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pings
}

// summary is "METHOD STATUS" of each request, in order, with "mount" after
// a mount request's status.
func summary(reqs []sent) string {
	var s []string
	for _, r := range reqs {
		l := r.method + " " + http.StatusText(r.status)
		if strings.Contains(r.query, "mount=") {
			l += " mount"
		}
		s = append(s, l)
	}
	return strings.Join(s, ", ")
}

func blobOf(t *testing.T, data []byte) v1.Hash {
	t.Helper()
	sum := sha256.Sum256(data)
	h, err := v1.NewHash("sha256:" + hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func repoOf(t *testing.T, host, path string) name.Repository {
	t.Helper()
	r, err := name.NewRepository(host + "/" + path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// readBlob reads blob d of repo through go-containerregistry (which
// checks the digest).
func readBlob(t *testing.T, repo name.Repository, d v1.Hash, opts ...remote.Option) []byte {
	t.Helper()
	l, err := remote.Layer(repo.Digest(d.String()), opts...)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Compressed()
	if err != nil {
		t.Fatalf("%s@%s: %v", repo, d, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("%s@%s: %v", repo, d, err)
	}
	return data
}

func memBody(data []byte) (io.ReadCloser, func() (io.ReadCloser, error)) {
	get := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	b, _ := get()
	return b, get
}

// TestBlobUploaderDebian: against the real registry (distribution 2.8,
// TLS and htpasswd), an upload is one POST and one PUT carrying the whole
// blob (its body the one given, an *os.File as it is, GetBody only when
// given), and lands with its digest; bytes that do not match their digest
// are refused as DIGEST_INVALID, a *transport.Error, and nothing is
// committed; a mount is one POST answered 201, nothing asked before; a
// mount the registry does not do (the repository named has no such blob:
// distribution starts an upload, 202) sends the bytes into that upload
// with one PUT. The registry is pinged once per pair of repositories (the
// authorized transports are kept), and no error shows the password.
func TestBlobUploaderDebian(t *testing.T) {
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	rec := &recordingTransport{inner: reg.Transport()}
	up := registry.NewBlobUploader(reg.Keychain(), rec)
	ctx := t.Context()
	a, b, c, other := repoOf(t, reg.Host, "team/a"), repoOf(t, reg.Host, "team/b"), repoOf(t, reg.Host, "team/c"), repoOf(t, reg.Host, "team/other")
	hasBlob := func(repo name.Repository, d v1.Hash) bool {
		t.Helper()
		req, _ := http.NewRequest(http.MethodHead, reg.URL()+"/v2/"+repo.RepositoryStr()+"/blobs/"+d.String(), nil)
		req.SetBasicAuth(reg.Username, reg.Password)
		resp, err := (&http.Client{Transport: reg.Transport()}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}

	// In memory, with a getBody.
	data := bytes.Repeat([]byte("layer bytes "), 10000)
	d := blobOf(t, data)
	body, getBody := memBody(data)
	if err := up.Upload(ctx, a, d, int64(len(data)), body, getBody); err != nil {
		t.Fatal(err)
	}
	blob := rec.take()
	if got := summary(blob); got != "POST Accepted, PUT Created" {
		t.Fatalf("upload: %s, want a POST and a PUT", got)
	}
	put := blob[1]
	if put.body != body || !put.getBody || put.contentLength != int64(len(data)) || put.contentType != "application/octet-stream" ||
		!strings.Contains(put.query, "_state=") || !strings.HasSuffix(put.query, "digest="+strings.Replace(d.String(), ":", "%3A", 1)) {
		t.Errorf("PUT: body %T (the one given: %v), GetBody %v, Content-Length %d, Content-Type %q, query %q", put.body, put.body == body, put.getBody, put.contentLength, put.contentType, put.query)
	}
	if got := readBlob(t, a, d, reg.Options()...); !bytes.Equal(got, data) {
		t.Errorf("read back %d bytes, want the %d uploaded", len(got), len(data))
	}

	// A file, no getBody: its body goes to the transport as it is.
	fdata := bytes.Repeat([]byte("file bytes "), 5000)
	fd := blobOf(t, fdata)
	p := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(p, fdata, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Upload(ctx, a, fd, int64(len(fdata)), f, nil); err != nil {
		t.Fatal(err)
	}
	blob = rec.take()
	if got := summary(blob); got != "POST Accepted, PUT Created" {
		t.Fatalf("upload of a file: %s", got)
	}
	if blob[1].body != io.ReadCloser(f) || blob[1].getBody {
		t.Errorf("PUT of a file: body %T (the file: %v), GetBody %v", blob[1].body, blob[1].body == io.ReadCloser(f), blob[1].getBody)
	}
	if _, err := f.Read(make([]byte, 1)); err == nil {
		t.Error("the file is still open after its upload")
	}
	if got := readBlob(t, a, fd, reg.Options()...); !bytes.Equal(got, fdata) {
		t.Errorf("read back %d bytes, want the %d of the file", len(got), len(fdata))
	}

	// Bytes that do not match their digest.
	bad := append([]byte(nil), data...)
	bad[100] ^= 1
	body, getBody = memBody(bad)
	err = up.Upload(ctx, other, d, int64(len(bad)), body, getBody)
	var te *transport.Error
	if !errors.As(err, &te) || len(te.Errors) == 0 || te.Errors[0].Code != transport.DigestInvalidErrorCode {
		t.Fatalf("upload of damaged bytes: %v, want a *transport.Error with DIGEST_INVALID", err)
	}
	if msg := err.Error(); !strings.Contains(msg, d.String()) || !strings.Contains(msg, other.String()) || strings.Contains(msg, reg.Password) {
		t.Errorf("error %q: want the digest and %s, never the password", msg, other)
	}
	rec.take()
	if hasBlob(other, d) {
		t.Errorf("%s holds %s after a refused upload", other, d)
	}

	// Mounted: one POST, open never called.
	opened := 0
	open := func() (io.ReadCloser, error) { opened++; return io.NopCloser(bytes.NewReader(data)), nil }
	mounted, err := up.Mount(ctx, b, d, int64(len(data)), a, open)
	if err != nil || !mounted || opened != 0 {
		t.Fatalf("mount: mounted %v, opened %d, %v", mounted, opened, err)
	}
	if got := summary(rec.take()); got != "POST Created mount" {
		t.Errorf("mount: %s, want one POST answered 201", got)
	}
	if got := readBlob(t, b, d, reg.Options()...); !bytes.Equal(got, data) {
		t.Errorf("mounted blob: %d bytes", len(got))
	}

	// Not mounted (other has no such blob): the bytes go into the upload
	// the registry started.
	mounted, err = up.Mount(ctx, c, d, int64(len(data)), other, open)
	if err != nil || mounted || opened != 1 {
		t.Fatalf("mount refused: mounted %v, opened %d, %v", mounted, opened, err)
	}
	blob = rec.take()
	if got := summary(blob); got != "POST Accepted mount, PUT Created" {
		t.Fatalf("mount refused: %s, want the POST answered 202 and one PUT", got)
	}
	if !blob[1].getBody || blob[1].contentLength != int64(len(data)) {
		t.Errorf("PUT of a refused mount: GetBody %v (open), Content-Length %d", blob[1].getBody, blob[1].contentLength)
	}
	if got := readBlob(t, c, d, reg.Options()...); !bytes.Equal(got, data) {
		t.Errorf("blob uploaded for a refused mount: %d bytes", len(got))
	}

	// One ping per pair of repositories: (a), (other), (b from a), (c
	// from other); the second upload to a reused a's transport.
	if n := rec.pingCount(); n != 4 {
		t.Errorf("%d pings, want 4", n)
	}
}

// TestBlobUploaderNoMount: go-containerregistry's registry does not mount
// (it answers every upload POST 202, with a Location that is a path
// alone): Mount puts the bytes it opens into that upload, resolved
// against the registry's URL, and reports the blob not mounted.
func TestBlobUploaderNoMount(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	rec := &recordingTransport{inner: http.DefaultTransport}
	up := registry.NewBlobUploader(nil, rec)
	a, b := repoOf(t, host, "x/a"), repoOf(t, host, "x/b")
	data := []byte(`{"architecture":"amd64"}`)
	d := blobOf(t, data)
	body, getBody := memBody(data)
	if err := up.Upload(t.Context(), a, d, int64(len(data)), body, getBody); err != nil {
		t.Fatal(err)
	}
	opened := 0
	mounted, err := up.Mount(t.Context(), b, d, int64(len(data)), a, func() (io.ReadCloser, error) {
		opened++
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	if err != nil || mounted || opened != 1 {
		t.Fatalf("mount: mounted %v, opened %d, %v", mounted, opened, err)
	}
	var blob []sent
	for _, r := range rec.take() {
		if strings.Contains(r.path, "/blobs/") {
			blob = append(blob, r)
		}
	}
	if got := summary(blob); got != "POST Accepted, PUT Created, POST Accepted mount, PUT Created" {
		t.Errorf("requests: %s", got)
	}
	if got := readBlob(t, b, d); !bytes.Equal(got, data) {
		t.Errorf("read back %q", got)
	}
	// An empty blob: no body.
	empty := blobOf(t, nil)
	if err := up.Upload(t.Context(), a, empty, 0, io.NopCloser(bytes.NewReader(nil)), nil); err != nil {
		t.Fatal(err)
	}
	if got := readBlob(t, a, empty); len(got) != 0 {
		t.Errorf("empty blob read back as %d bytes", len(got))
	}
}

// TestBlobUploaderMountRefused: a registry that answers the mount request
// with an error (here 404 NAME_UNKNOWN, from a fault proxy in front of the
// real registry: some registries refuse the scope of a repository they do
// not know) gets a plain upload instead: one POST more, then the bytes
// opened, with one PUT.
func TestBlobUploaderMountRefused(t *testing.T) {
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartFaultProxy(t, reg.URL(), reg.Transport(), testenv.FaultOptions{Status: func(r *http.Request) int {
		if r.Method == http.MethodPost && r.URL.Query().Get("mount") != "" {
			return http.StatusNotFound
		}
		return 0
	}})
	up := registry.NewBlobUploader(nil, http.DefaultTransport)
	a, b := repoOf(t, proxy.Host, "x/a"), repoOf(t, proxy.Host, "x/b")
	data := bytes.Repeat([]byte("refused "), 1000)
	d := blobOf(t, data)
	if err := up.Upload(t.Context(), a, d, int64(len(data)), io.NopCloser(bytes.NewReader(data)), nil); err != nil {
		t.Fatal(err)
	}
	proxy.ResetRequests()
	mounted, err := up.Mount(t.Context(), b, d, int64(len(data)), a, func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	if err != nil || mounted {
		t.Fatalf("mount: mounted %v, %v", mounted, err)
	}
	var got []string
	for _, r := range proxy.Requests() {
		if r.Path != "/v2/" { // the ping of the pair (b, a)
			got = append(got, fmt.Sprintf("%s %d", r.Method, r.Status))
		}
	}
	if strings.Join(got, ", ") != "POST 404, POST 202, PUT 201" {
		t.Errorf("requests: %v, want the mount refused, a plain POST and one PUT", got)
	}
	if got := readBlob(t, b, d); !bytes.Equal(got, data) {
		t.Errorf("read back %d bytes", len(got))
	}
}
