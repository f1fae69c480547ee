package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// BlobUploader puts blobs into repositories of a registry with the fewest
// requests the OCI distribution spec allows ("Pushing blobs"): a
// monolithic upload, POST /v2/<name>/blobs/uploads/ then one PUT of the
// whole blob at the Location answered, and a cross-repository mount asked
// directly (POST …/blobs/uploads/?mount=<digest>&from=<repository>,
// "Mounting a blob from another repository"), without the HEAD
// go-containerregistry's remote.Pusher sends before each, and without its
// PATCH. It asks nothing about a blob: the caller knows that the
// repository lacks it.
//
// The authorized transport of each repository (and of each repository a
// blob is mounted from) is built once (go-containerregistry's
// transport.NewWithContext: one ping, answered from the client's cache,
// and one token, for a registry that hands tokens) and reused. Safe for
// concurrent use.
type BlobUploader struct {
	keychain authn.Keychain
	rt       http.RoundTripper

	mu    sync.Mutex
	auths map[authKey]*authEntry
}

// authKey names an authorized transport: the repository written to, and
// the repository mounted from ("" for a plain upload).
type authKey struct{ repo, from string }

// authEntry is one authorized transport: done is closed once rt or err
// is set.
type authEntry struct {
	done chan struct{}
	rt   http.RoundTripper
	err  error
}

// NewBlobUploader returns a BlobUploader that authenticates with the
// credentials keychain resolves for each repository (nil: anonymous) and
// sends its requests through rt (nil: go-containerregistry's
// remote.DefaultTransport). rt sits below the authentication, as
// Client.Transport does: the client's retries, watchdog and cached pings
// apply to the uploads.
func NewBlobUploader(keychain authn.Keychain, rt http.RoundTripper) *BlobUploader {
	if keychain == nil {
		keychain = Anonymous
	}
	if rt == nil {
		rt = remote.DefaultTransport
	}
	return &BlobUploader{keychain: keychain, rt: rt, auths: map[authKey]*authEntry{}}
}

// Upload puts blob d (a digest), size bytes read from body, into repo
// within ctx: POST
// /v2/<name>/blobs/uploads/ (answered 202 Accepted with a Location), then
// PUT <Location>?digest=<d> with the whole body (Content-Length: size,
// Content-Type: application/octet-stream), answered 201 Created: the OCI
// distribution spec's monolithic upload, "POST then PUT" in "Pushing
// blobs". The registry hashes what it receives: bytes that do not match d
// are refused (400 DIGEST_INVALID) and nothing is committed.
//
// body is the PUT's request body as it is, no wrapper (so that an
// *os.File positioned at the blob can go from the file to the socket by
// sendfile, when the transport below leaves it as it is); Upload closes
// it, also when it fails before sending it. An empty blob (size 0) is sent
// without a body. getBody, when not nil, returns the same bytes
// again, so that the transport may send the PUT again (a blob held in
// memory); nil: body is read once.
//
// Errors name the blob and repository (with its registry); a registry's
// answer other than the expected one is a *transport.Error
// (go-containerregistry's transport.CheckError) inside it, with the
// registry's error codes.
func (u *BlobUploader) Upload(ctx context.Context, repo name.Repository, d v1.Hash, size int64, body io.ReadCloser, getBody func() (io.ReadCloser, error)) error {
	err := u.upload(ctx, repo, d, size, body, getBody)
	if err != nil {
		return fmt.Errorf("uploading blob %s to %s: %w", d, repo, err)
	}
	return nil
}

func (u *BlobUploader) upload(ctx context.Context, repo name.Repository, d v1.Hash, size int64, body io.ReadCloser, getBody func() (io.ReadCloser, error)) error {
	rt, err := u.transport(ctx, repo, nil)
	if err != nil {
		body.Close()
		return err
	}
	_, loc, err := u.start(ctx, rt, repo, nil)
	if err != nil {
		body.Close()
		return err
	}
	return u.put(ctx, rt, loc, d, size, body, getBody)
}

// Mount makes blob d (a digest, size bytes) of repository from present in
// repo, both on the same registry, within ctx, with one request when the
// registry mounts it: POST
// /v2/<name>/blobs/uploads/?mount=<d>&from=<from> ("Mounting a blob from
// another repository" in the OCI distribution spec), answered 201
// Created; mounted is then true. Nothing is asked before: the caller
// knows that from has the blob and repo lacks it.
//
// A registry that does not mount answers 202 Accepted and starts an
// upload instead (the spec allows it: no cross-repository mounts, or no
// read access to from); Mount then sends the blob into that upload, size
// bytes read from open (the PUT of Upload), and mounted is false. open is
// called only then, and again if the transport sends the PUT again. A
// registry that refuses the mount request (a 4xx answer but 429: some
// refuse the scope of a repository they do not know) gets a plain upload
// instead, one POST more, as go-containerregistry's pusher does.
//
// The token asked for covers push to repo and pull from from. Errors
// name the blob and both repositories; the registry's answers are
// *transport.Error inside them.
func (u *BlobUploader) Mount(ctx context.Context, repo name.Repository, d v1.Hash, size int64, from name.Repository, open func() (io.ReadCloser, error)) (mounted bool, err error) {
	mounted, err = u.mount(ctx, repo, d, size, from, open)
	if err != nil {
		return false, fmt.Errorf("mounting blob %s from %s into %s: %w", d, from, repo, err)
	}
	return mounted, nil
}

func (u *BlobUploader) mount(ctx context.Context, repo name.Repository, d v1.Hash, size int64, from name.Repository, open func() (io.ReadCloser, error)) (bool, error) {
	if from.RegistryStr() != repo.RegistryStr() {
		return false, fmt.Errorf("%s is on another registry than %s", from, repo)
	}
	rt, err := u.transport(ctx, repo, &from)
	if err != nil {
		return false, err
	}
	q := url.Values{"mount": {d.String()}, "from": {from.RepositoryStr()}}
	mounted, loc, err := u.start(ctx, rt, repo, q)
	var te *transport.Error
	if errors.As(err, &te) && te.StatusCode >= 400 && te.StatusCode < 500 && te.StatusCode != http.StatusTooManyRequests {
		mounted, loc, err = u.start(ctx, rt, repo, nil) // refused: upload instead
	}
	if err != nil || mounted {
		return mounted, err
	}
	body, err := open()
	if err != nil {
		return false, fmt.Errorf("the registry did not mount it; reading it from %s: %w", from, err)
	}
	if err := u.put(ctx, rt, loc, d, size, body, open); err != nil {
		return false, fmt.Errorf("the registry did not mount it: %w", err)
	}
	return false, nil
}

// start sends POST /v2/<name>/blobs/uploads/ with query q (nil: none) and
// returns whether the registry answered 201 Created (a mount), else the
// absolute URL of the upload it started (202 Accepted and its Location).
func (u *BlobUploader) start(ctx context.Context, rt http.RoundTripper, repo name.Repository, q url.Values) (created bool, loc *url.URL, err error) {
	target := &url.URL{Scheme: repo.Scheme(), Host: repo.RegistryStr(), Path: "/v2/" + repo.RepositoryStr() + "/blobs/uploads/"}
	if q != nil {
		target.RawQuery = q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), nil)
	if err != nil {
		return false, nil, err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return false, nil, err
	}
	defer drain(resp)
	if err := transport.CheckError(resp, http.StatusCreated, http.StatusAccepted); err != nil {
		return false, nil, err
	}
	if resp.StatusCode == http.StatusCreated {
		return true, nil, nil
	}
	// req.URL is the URL sent: the authorized transport sets its scheme
	// to the one the registry answered the ping on.
	loc, err = location(req.URL, resp.Header.Get("Location"))
	return false, loc, err
}

// put sends the whole blob into the upload at loc: PUT loc?digest=d (the
// query loc has kept), expecting 201 Created.
func (u *BlobUploader) put(ctx context.Context, rt http.RoundTripper, loc *url.URL, d v1.Hash, size int64, body io.ReadCloser, getBody func() (io.ReadCloser, error)) error {
	target := *loc
	if target.RawQuery != "" {
		target.RawQuery += "&"
	}
	target.RawQuery += "digest=" + url.QueryEscape(d.String())
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, target.String(), nil)
	if err != nil {
		body.Close()
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	switch {
	case size < 0:
		body.Close()
		return fmt.Errorf("blob %s: size %d", d, size)
	case size > 0:
		req.Body, req.ContentLength = body, size
		if getBody != nil {
			req.GetBody = getBody
		}
	default:
		// An empty blob: net/http reads a body of unknown length
		// (ContentLength 0) to find out; send none.
		body.Close()
		req.Body = http.NoBody
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	defer drain(resp)
	return transport.CheckError(resp, http.StatusCreated)
}

// drain reads what is left of a small answer and closes it, so that its
// connection is reused.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// location resolves an upload's Location header against the URL of the
// request it answered (a registry may answer a path alone). A Location on
// another host that is an address of this machine or of a private or
// link-local network is refused: a registry must not make the client send
// a blob to an internal service (as go-containerregistry refuses it).
func location(req *url.URL, header string) (*url.URL, error) {
	if header == "" {
		return nil, fmt.Errorf("POST %s: 202 Accepted without a Location header", req.Redacted())
	}
	l, err := url.Parse(header)
	if err != nil {
		return nil, fmt.Errorf("POST %s: Location header: %w", req.Redacted(), err)
	}
	l = req.ResolveReference(l)
	if l.Scheme != "http" && l.Scheme != "https" {
		return nil, fmt.Errorf("POST %s: Location %s is not an HTTP URL", req.Redacted(), l.Redacted())
	}
	if l.Hostname() != req.Hostname() && internalHost(l.Hostname()) {
		return nil, fmt.Errorf("POST %s: Location %s sends the upload to an internal address of another host", req.Redacted(), l.Redacted())
	}
	return l, nil
}

// internalHost reports whether host is an IP address of this machine or of
// a private or link-local network (loopback, RFC 1918, RFC 4193,
// link-local, unspecified), or a numeric host in a spelling that is no
// DNS name and no plain address (127.1, 0x7f000001: refused, not
// interpreted).
func internalHost(host string) bool {
	h, _, _ := strings.Cut(host, "%")
	if a, err := netip.ParseAddr(h); err == nil {
		a = a.Unmap()
		return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsUnspecified()
	}
	// A DNS name's last label is never numeric.
	last := h[strings.LastIndex(h, ".")+1:]
	if strings.HasPrefix(strings.ToLower(last), "0x") {
		return true
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// transport returns the authorized transport for writing to repo (and
// reading from from, when not nil), built once per pair. A failure is
// returned to the calls that waited for it and not kept: the next call
// tries again.
func (u *BlobUploader) transport(ctx context.Context, repo name.Repository, from *name.Repository) (http.RoundTripper, error) {
	k := authKey{repo: repo.String()}
	scopes := []string{repo.Scope(transport.PushScope)}
	if from != nil {
		k.from = from.String()
		scopes = append(scopes, from.Scope(transport.PullScope))
	}
	u.mu.Lock()
	e, ok := u.auths[k]
	if !ok {
		e = &authEntry{done: make(chan struct{})}
		u.auths[k] = e
	}
	u.mu.Unlock()
	if ok {
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return e.rt, e.err
	}
	e.rt, e.err = u.authorize(ctx, repo, scopes)
	if e.err != nil {
		u.mu.Lock()
		delete(u.auths, k)
		u.mu.Unlock()
	}
	close(e.done)
	return e.rt, e.err
}

// authorize builds the transport of repo's registry with the credentials
// of repo and scopes.
func (u *BlobUploader) authorize(ctx context.Context, repo name.Repository, scopes []string) (http.RoundTripper, error) {
	auth, err := authn.Resolve(ctx, u.keychain, repo)
	if err != nil {
		return nil, fmt.Errorf("credentials for %s: %w", repo, err)
	}
	rt, err := transport.NewWithContext(ctx, repo.Registry, auth, u.rt, scopes)
	if err != nil {
		return nil, fmt.Errorf("authenticating to %s: %w", repo.RegistryStr(), err)
	}
	return rt, nil
}
