// Package chartmuseum uploads chart archives to, and deletes chart
// versions from, a chart repository served by ChartMuseum (helm.sh/chartmuseum),
// through its API: the repository Alauda's Captain serves for a ChartRepo
// (violet's way of publishing charts, to public-charts; docs/charts.md).
package chartmuseum

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"sigs.k8s.io/yaml"
)

// Repo is one chart repository of a ChartMuseum.
type Repo struct {
	// URL is the repository as Helm reads it (its index.yaml is below
	// it), the spec.url of the ChartRepo that serves it:
	// http://captain-chartmuseum:8080/public-charts for a ChartMuseum
	// serving one repository per path (--depth 1), or the server's root
	// for one repository.
	URL string
	// Client makes the requests (its transport: CA, proxy); nil:
	// http.DefaultClient.
	Client *http.Client
	// Auth authenticates every request (upload, delete, index.yaml);
	// the zero Auth sends none.
	Auth Auth
}

// Auth is how a client proves itself to a ChartMuseum: HTTP basic auth
// (the server's --basic-auth-user/--basic-auth-pass) or a bearer token
// (its --bearer-auth: a JWT its --auth-cert-path verifies, with the
// repository's push and pull actions), as the helm cm-push plugin sends
// them (--username/--password, --access-token). A Token wins over a user
// name and password. The credentials go only to the repository's URL:
// net/http drops the Authorization header on a redirect to another
// host.
type Auth struct {
	Username string
	Password string
	Token    string
}

// ErrUnauthorized is wrapped by the error of a request the server
// refused for want of credentials (401 or 403): the caller names the
// flags that give them.
var ErrUnauthorized = errors.New("the ChartMuseum refused the credentials given (none, or wrong ones)")

// Result says what Upload did.
type Result struct {
	// Skipped: the repository had the version with the same archive
	// (its index.yaml's digest), so nothing was uploaded.
	Skipped bool
}

// apiURL is ChartMuseum's API URL for the repository and path p: the
// API lives at /api/<repository path>/… (ChartMuseum's multitenant
// routes; /api/charts for the root repository).
func (r Repo) apiURL(p string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(r.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("chart repository URL %q: want http(s)://host[:port][/repository]", r.URL)
	}
	u.Path = "/api" + u.Path + "/charts" + p
	return u.String(), nil
}

func (r Repo) client() *http.Client {
	if r.Client != nil {
		return r.Client
	}
	return http.DefaultClient
}

// Upload uploads a chart archive (.tgz) of chart name at version: POST
// <api>/charts with the archive as the body. When the repository already
// has the version (409 Conflict: ChartMuseum does not overwrite), its
// index.yaml says whether it is the same archive (the entry's digest, the
// SHA-256 of the archive): then nothing is done (Result.Skipped), else
// the error says the repository holds other content under that version.
// Errors name the repository and what the server said (its status and
// body, cut short).
func (r Repo) Upload(ctx context.Context, name, version string, archive []byte) (Result, error) {
	u, err := r.apiURL("")
	if err != nil {
		return Result{}, err
	}
	status, body, err := r.do(ctx, http.MethodPost, u, archive)
	switch {
	case err != nil:
		return Result{}, err
	case status == http.StatusCreated || status == http.StatusOK:
		return Result{}, nil
	case status != http.StatusConflict:
		return Result{}, fmt.Errorf("uploading %s %s to %s: %d %s", name, version, r.URL, status, body)
	}
	digest, err := r.Digest(ctx, name, version)
	if err != nil {
		return Result{}, err
	}
	sum := sha256.Sum256(archive)
	if digest != hex.EncodeToString(sum[:]) {
		return Result{}, fmt.Errorf("%s already has %s %s with other content (digest %s, ours %s): a chart version is published once; publish a new version", r.URL, name, version, digest, hex.EncodeToString(sum[:]))
	}
	return Result{Skipped: true}, nil
}

// Delete deletes version of chart name from the repository: DELETE
// <api>/charts/<name>/<version>. A version the repository does not have
// (404) is no error.
func (r Repo) Delete(ctx context.Context, name, version string) error {
	u, err := r.apiURL("/" + url.PathEscape(name) + "/" + url.PathEscape(version))
	if err != nil {
		return err
	}
	status, body, err := r.do(ctx, http.MethodDelete, u, nil)
	switch {
	case err != nil:
		return err
	case status == http.StatusOK || status == http.StatusNotFound:
		return nil
	}
	return fmt.Errorf("deleting %s %s from %s: %d %s", name, version, r.URL, status, body)
}

// Digest returns the digest index.yaml lists for version of chart name
// (hex SHA-256 of its archive, Helm's repository index format). The
// error says when the index does not list it.
func (r Repo) Digest(ctx context.Context, name, version string) (string, error) {
	idx, err := r.index(ctx)
	if err != nil {
		return "", err
	}
	for _, e := range idx.Entries[name] {
		if e.Version == version {
			return e.Digest, nil
		}
	}
	return "", fmt.Errorf("%s/index.yaml does not list %s %s", r.URL, name, version)
}

// Versions returns the versions of chart name index.yaml lists (none
// when it lists no such chart).
func (r Repo) Versions(ctx context.Context, name string) ([]string, error) {
	idx, err := r.index(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range idx.Entries[name] {
		out = append(out, e.Version)
	}
	return out, nil
}

// repoIndex is what is read of a repository's index.yaml (Helm's
// repository index format): each chart's versions and their digests.
type repoIndex struct {
	Entries map[string][]struct {
		Version string `json:"version"`
		Digest  string `json:"digest"`
	} `json:"entries"`
}

// index reads the repository's index.yaml.
func (r Repo) index(ctx context.Context) (*repoIndex, error) {
	status, body, err := r.do(ctx, http.MethodGet, strings.TrimSuffix(r.URL, "/")+"/index.yaml", nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("reading %s/index.yaml: %d %s", r.URL, status, body)
	}
	var idx repoIndex
	if err := yaml.Unmarshal(body, &idx); err != nil {
		return nil, fmt.Errorf("%s/index.yaml: %w", r.URL, err)
	}
	return &idx, nil
}

// maxBody caps what is read of an answer (bytes): an index.yaml of a
// large repository is a few MiB.
const maxBody = 64 << 20

// do sends one request and returns the status and body (an error body
// cut to 200 bytes).
func (r Repo) do(ctx context.Context, method, u string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/gzip")
	}
	switch a := r.Auth; {
	case a.Token != "":
		req.Header.Set("Authorization", "Bearer "+a.Token)
	case a.Username != "" || a.Password != "":
		req.SetBasicAuth(a.Username, a.Password)
	}
	resp, err := r.client().Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	if len(data) > maxBody {
		return 0, nil, errors.New(u + ": answer too large")
	}
	if resp.StatusCode >= 300 && len(data) > 200 {
		data = append(data[:200:200], "…"...)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return 0, nil, fmt.Errorf("%s %s: %s: %w", method, u, resp.Status, ErrUnauthorized)
	}
	return resp.StatusCode, data, nil
}
