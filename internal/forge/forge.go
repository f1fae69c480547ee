// Package forge opens, finds, updates, comments on, closes and auto-merges
// the pull requests (GitLab: merge requests) through which a cluster's
// catalog change is reviewed (docs/design.md).
//
// Three forges are supported, each through its own maintained Go client:
// GitHub and GitHub Enterprise Server (google/go-github), GitLab
// (gitlab-org/api/client-go) and Gitea or Forgejo (the Gitea SDK). New
// builds a Forge from Options, detecting the forge, its API URL and the
// repository from the catalog repo's Git URL when they are not given.
//
// The token is a secret: no error, log line or String of this package
// contains it. A write the token is not allowed to do is a *PermissionError
// that names the permission to grant.
//
// The package forgetest has contract fakes of the GitHub and GitLab APIs
// for tests.
package forge

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/operator-publish/publish/internal/redact"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"
)

// The kinds of forge, as given to --forge.
const (
	KindGitHub = "github" // github.com and GitHub Enterprise Server
	KindGitLab = "gitlab" // gitlab.com and self-managed GitLab
	KindGitea  = "gitea"  // Gitea, and Forgejo (which keeps Gitea's API)
)

// Options says which forge and repository, and how to authenticate. The
// flag named in each field's comment is the one that errors of New name.
type Options struct {
	// Kind is "github", "gitlab" or "gitea" ("forgejo" is taken as
	// "gitea"); "" detects it from CatalogURL with Detect (--forge).
	Kind string
	// APIURL is the forge's REST API root (--forge-api-url); "" derives it
	// from CatalogURL: https://api.github.com for github.com,
	// https://HOST/api/v3 for GitHub Enterprise Server, https://HOST/api/v4
	// for GitLab, https://HOST/api/v1 for Gitea. An http:// catalog URL
	// keeps its scheme and port (a test server); an SSH URL gives https.
	APIURL string
	// Repo is "owner/name", on GitLab "group/sub/name"; "" takes it from
	// CatalogURL (--forge-repo).
	Repo string
	// Token is the API token (--forge-token / PUBLISH_FORGE_TOKEN). It is a
	// secret: never printed, never part of an error. Surrounding white space
	// (a trailing newline from a file) is trimmed.
	Token string
	// CatalogURL is the catalog repo's Git URL: https://host/owner/name(.git),
	// ssh://git@host[:port]/owner/name(.git) or git@host:owner/name(.git).
	CatalogURL string
	// CABundle holds extra PEM CA certificates trusted for a self-hosted
	// forge, on top of the system pool. Ignored when HTTPClient is set.
	CABundle []byte
	// HTTPClient, when set, is used as it is (tests).
	HTTPClient *http.Client
}

// String shows o with the token hidden, so that logging Options with %v or
// %+v never prints the secret.
func (o Options) String() string {
	tok := ""
	if o.Token != "" {
		tok = "[redacted]"
	}
	return fmt.Sprintf("{Kind:%q APIURL:%q Repo:%q Token:%s CatalogURL:%q CABundle:%d bytes}", o.Kind, redactURL(o.APIURL), o.Repo, tok, redactURL(o.CatalogURL), len(o.CABundle))
}

// GoString is String, for %#v.
func (o Options) GoString() string { return "forge.Options" + o.String() }

// PullRequest is a pull request (GitHub, Gitea) or merge request (GitLab)
// as this package reads it back from the forge.
type PullRequest struct {
	Number  int    // GitHub/Gitea number, GitLab IID (the !N of the project)
	URL     string // the web page of the PR, for people (html_url / web_url)
	Title   string
	Body    string // GitLab "description"
	Head    string // source branch
	Base    string // target branch
	HeadSHA string // commit at the tip of Head as the forge saw it
	State   string // "open", "closed" or "merged"
	Labels  []string
	// NodeID is GitHub's GraphQL node ID (needed for auto-merge); empty on
	// other forges and when unknown, in which case AutoMerge looks it up.
	NodeID string
}

// Change is what a PR says: its title, its description and the labels it
// should carry.
type Change struct {
	Title  string
	Body   string
	Labels []string
}

// Forge is one repository on one forge, reached with one token. Every
// method honours ctx; errors name the forge, the repository and the
// operation, never the token.
type Forge interface {
	// Kind is KindGitHub, KindGitLab or KindGitea.
	Kind() string
	// Repo is the repository as "owner/name" (GitLab: the project path).
	Repo() string
	// MaxBody is the forge's limit on a PR description (see each forge's
	// constructor for where the number comes from). GitHub counts Unicode
	// code points, GitLab bytes: a caller that keeps len(body) (bytes)
	// under MaxBody is safe on all of them.
	MaxBody() int
	// Check reads the repository and tells whether the token may open pull
	// requests there; a token that may not gives a *PermissionError naming
	// the permission needed. Forges that do not report a token's rights
	// before a write (GitHub App tokens) pass, and the first write reports.
	Check(ctx context.Context) error
	// Find returns the open PR from branch head of the same repository
	// into base, or nil, nil when there is none.
	Find(ctx context.Context, head, base string) (*PullRequest, error)
	// Create opens a PR from head into base with c's title, body and
	// labels. When one is already open for head and base (GitHub answers
	// 422, GitLab and Gitea 409), that one is found and updated with c
	// instead, so Create is idempotent.
	Create(ctx context.Context, head, base string, c Change) (*PullRequest, error)
	// Update sets PR number's title and body from c (an empty Title or Body
	// leaves that field as it is) and adds c's labels, keeping the labels
	// already on it.
	Update(ctx context.Context, number int, c Change) (*PullRequest, error)
	// Comment adds a comment (GitLab: a note) with body to PR number.
	Comment(ctx context.Context, number int, body string) error
	// Close closes PR number without merging it, commenting first when
	// comment is not empty.
	Close(ctx context.Context, number int, comment string) error
	// AutoMerge asks the forge to merge pr with method ("merge", "squash"
	// or "rebase") once its required checks pass (at once when there are
	// none). It returns an error wrapping ErrAutoMergeUnsupported when the
	// forge or the repository's settings do not allow it.
	AutoMerge(ctx context.Context, pr *PullRequest, method string) error
}

// ErrAutoMergeUnsupported is wrapped by AutoMerge's error when the forge or
// the repository does not allow auto-merge (on GitHub: "Allow auto-merge"
// is off in the repository's settings). Test it with errors.Is; the run
// can go on and leave the PR for a person to merge.
var ErrAutoMergeUnsupported = errors.New("auto-merge is not allowed on this repository")

// PermissionError is a request the forge refused because of the token's
// rights: HTTP 401, or 403/404 on a write (a forge answers 404 for what the
// token may not see). Error() names the flag of the token, the permission to
// grant and the forge's own message, never the token.
type PermissionError struct {
	Kind string // KindGitHub, KindGitLab or KindGitea
	Repo string // "owner/name"
	Op   string // what was refused, e.g. "create pull request"
	// Need is the permission to grant, e.g. "Pull requests: write" (from
	// GitHub's X-Accepted-GitHub-Permissions header when it sent one).
	Need    string
	Status  int    // HTTP status, 0 when the forge answered 200 (GraphQL)
	Message string // the forge's message
}

// Error says which token lacks what, for which repository and operation.
func (e *PermissionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s: ", e.Kind, e.Repo, e.Op)
	switch e.Status {
	case http.StatusUnauthorized:
		b.WriteString("the forge refused the token (--forge-token / PUBLISH_FORGE_TOKEN): it is expired, revoked or mistyped")
		if e.Need != "" {
			fmt.Fprintf(&b, ", or it lacks %s", e.Need)
		}
	case http.StatusNotFound:
		fmt.Fprintf(&b, "not found: the repository or pull request does not exist, or the token (--forge-token / PUBLISH_FORGE_TOKEN) cannot see it; grant it %s", e.Need)
	default:
		fmt.Fprintf(&b, "the token (--forge-token / PUBLISH_FORGE_TOKEN) lacks a permission: grant it %s", e.Need)
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d", e.Status)
		if e.Message != "" {
			fmt.Fprintf(&b, ": %s", e.Message)
		}
		b.WriteString(")")
	} else if e.Message != "" {
		fmt.Fprintf(&b, " (%s)", e.Message)
	}
	return b.String()
}

// apiError is any other failed call: its message was redacted of the token
// when it was made; Unwrap gives the client's error (for errors.Is/As).
type apiError struct {
	msg string
	err error
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.err }

// base holds what every forge implementation shares.
type base struct {
	kind, repo, token string
}

func (b *base) Kind() string { return b.kind }
func (b *base) Repo() string { return b.repo }

// fail wraps err, a failed op, with the forge and repository, and removes
// the token from the text should a client have echoed it.
func (b *base) fail(op string, err error) error {
	var pe *PermissionError
	if errors.As(err, &pe) {
		return err
	}
	return &apiError{msg: b.redact(fmt.Sprintf("%s %s: %s: %v", b.kind, b.repo, op, err)), err: err}
}

// redact removes the token from s. A token of fewer than 6 characters is
// no real forge's (theirs are 20 and more) and is left, since replacing a
// letter everywhere would garble the message.
func (b *base) redact(s string) string {
	if len(b.token) < 6 {
		return s
	}
	return strings.ReplaceAll(s, b.token, "[redacted]")
}

// permission builds the PermissionError of a refused op.
func (b *base) permission(op, need string, status int, msg string) error {
	return &PermissionError{Kind: b.kind, Repo: b.repo, Op: op, Need: need, Status: status, Message: b.redact(msg)}
}

// mergeMethods are the methods AutoMerge takes.
var mergeMethods = map[string]bool{"merge": true, "squash": true, "rebase": true}

func checkMethod(method string) error {
	if !mergeMethods[method] {
		return fmt.Errorf("auto-merge method %q: want merge, squash or rebase", method)
	}
	return nil
}

// New returns the Forge that o describes. Kind, APIURL and Repo that are
// empty are derived from CatalogURL (see Detect and Options). Errors name
// the flag to fix (--forge, --forge-api-url, --forge-repo, --forge-token)
// and what to do; no network request is made.
func New(o Options) (Forge, error) {
	kind := strings.ToLower(strings.TrimSpace(o.Kind))
	if kind == "forgejo" {
		kind = KindGitea
	}
	var cat *gitURL
	if o.CatalogURL != "" {
		u, err := parseGitURL(o.CatalogURL)
		if err != nil && (kind == "" || o.APIURL == "" || o.Repo == "") {
			return nil, err
		}
		cat = u
	}
	switch kind {
	case "":
		if cat == nil {
			return nil, errors.New("--forge is not set and there is no catalog URL to detect the forge from: set --forge github|gitlab|gitea")
		}
		k, err := detectKind(cat.host)
		if err != nil {
			return nil, err
		}
		kind = k
	case KindGitHub, KindGitLab, KindGitea:
	default:
		return nil, fmt.Errorf("--forge %q: unknown forge: want github, gitlab or gitea (gitea also for Forgejo)", o.Kind)
	}

	apiURL := strings.TrimSpace(o.APIURL)
	if apiURL == "" {
		if cat == nil {
			return nil, fmt.Errorf("--forge-api-url is not set and there is no catalog URL to derive it from: set --forge-api-url (e.g. %s)", exampleAPIURL(kind))
		}
		apiURL = cat.apiURL(kind)
	}
	api, err := checkAPIURL(apiURL, kind)
	if err != nil {
		return nil, err
	}

	repo := strings.Trim(strings.TrimSpace(o.Repo), "/")
	if repo == "" {
		if cat == nil {
			return nil, errors.New("--forge-repo is not set and there is no catalog URL to take it from: set --forge-repo owner/name")
		}
		repo = cat.repo
	}
	if err := checkRepo(repo, kind); err != nil {
		return nil, err
	}

	token := strings.TrimSpace(o.Token)
	if token == "" {
		return nil, errors.New("--forge-token is empty (and PUBLISH_FORGE_TOKEN is not set): pull-request delivery needs a forge API token that may open pull requests")
	}
	if strings.IndexFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return nil, errors.New("--forge-token contains white space or control characters inside it: pass the token alone (not a header or a file with several lines)")
	}

	hc := o.HTTPClient
	if hc == nil {
		hc, err = defaultClient(o.CABundle)
		if err != nil {
			return nil, err
		}
	}
	hc = sameHostRedirects(hc)
	b := base{kind: kind, repo: repo, token: token}
	switch kind {
	case KindGitHub:
		return newGitHub(b, api, hc)
	case KindGitLab:
		return newGitLab(b, api, hc)
	default:
		return newGitea(b, api, hc)
	}
}

// sameHostRedirects returns a copy of hc whose transport refuses a
// redirect to another scheme, host or port than the request's (an https
// request may be redirected to https only): the client gets a
// *RedirectError instead, never the redirect. Every forge client sends its
// token on each request (go-github from its transport, GitLab as
// PRIVATE-TOKEN, which net/http keeps on a redirect, and net/http compares
// host names without their ports), so a forge, or a proxy in front of it,
// that redirects elsewhere would otherwise receive it there. The refusal
// is a transport error, which the GitLab client does not retry.
func sameHostRedirects(hc *http.Client) *http.Client {
	c := *hc
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = sameHostTransport{next: next}
	return &c
}

// RedirectError is a forge API's redirect to another host, refused.
type RedirectError struct {
	From, To string // scheme://host[:port]
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("the forge API at %s redirected to %s: refused, the token is never sent to another host (set --forge-api-url to the address the API answers at)", e.From, e.To)
}

type sameHostTransport struct{ next http.RoundTripper }

func (t sameHostTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.StatusCode < 300 || resp.StatusCode > 399 {
		return resp, err
	}
	loc, lerr := resp.Location()
	if lerr != nil {
		return resp, nil // no redirect to follow
	}
	if loc.Host != r.URL.Host || (r.URL.Scheme == "https" && loc.Scheme != "https") {
		resp.Body.Close()
		return nil, &RedirectError{From: r.URL.Scheme + "://" + r.URL.Host, To: loc.Scheme + "://" + loc.Host}
	}
	return resp, nil
}

// defaultClient is an HTTP client with the system CAs plus caBundle and an
// overall timeout per request, so a hung forge cannot hold a run forever.
func defaultClient(caBundle []byte) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if len(caBundle) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("the forge CA bundle holds no PEM certificate: give a file of \"-----BEGIN CERTIFICATE-----\" blocks")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 2 * time.Minute}, nil
}

func exampleAPIURL(kind string) string {
	switch kind {
	case KindGitHub:
		return "https://api.github.com, or https://HOST/api/v3 for GitHub Enterprise Server"
	case KindGitLab:
		return "https://HOST/api/v4"
	default:
		return "https://HOST/api/v1"
	}
}

// checkAPIURL parses an API URL and refuses what cannot work.
func checkAPIURL(s, kind string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("--forge-api-url %q: not an http(s) URL: give the API root, e.g. %s", redactURL(s), exampleAPIURL(kind))
	}
	if u.User != nil {
		return nil, fmt.Errorf("--forge-api-url %q: must not hold credentials: pass the token with --forge-token", redactURL(s))
	}
	if u.Scheme == "http" && !redact.LoopbackHost(u.Host) {
		return nil, fmt.Errorf("--forge-api-url %q: plain http:// to a host that is not this machine would send the token in clear: use https:// (plain HTTP is for localhost only)", redactURL(s))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("--forge-api-url %q: must not have a query or fragment: give the API root, e.g. %s", s, exampleAPIURL(kind))
	}
	return u, nil
}

// redactURL drops the user information of a URL that failed to parse or
// carried credentials (redact.URL).
func redactURL(s string) string { return redact.URL(s) }

var repoSegment = regexp.MustCompile(`^[A-Za-z0-9_.][A-Za-z0-9_.-]*$`)

func checkRepo(repo, kind string) error {
	parts := strings.Split(repo, "/")
	ok := len(parts) == 2 || (kind == KindGitLab && len(parts) > 2)
	for _, p := range parts {
		ok = ok && repoSegment.MatchString(p) && p != "." && p != ".."
	}
	if !ok {
		want := "owner/name"
		if kind == KindGitLab {
			want = "group/name or group/subgroup/name"
		}
		return fmt.Errorf("--forge-repo %q: not a %s repository path: want %s", repo, kind, want)
	}
	return nil
}

// gitURL is a catalog Git URL taken apart.
type gitURL struct {
	scheme string // "https", "http" or "ssh"
	host   string // host name, lower case, no port
	port   string // the port of an http(s) URL, "" otherwise
	repo   string // path without ".git"
}

// apiURL derives the API root of kind from the catalog URL.
func (g *gitURL) apiURL(kind string) string {
	scheme, host := "https", g.host
	if g.scheme == "http" {
		scheme = "http"
	}
	if g.port != "" {
		host = net.JoinHostPort(g.host, g.port)
	}
	switch kind {
	case KindGitHub:
		if g.host == "github.com" || g.host == "www.github.com" {
			return "https://api.github.com"
		}
		return scheme + "://" + host + "/api/v3"
	case KindGitLab:
		return scheme + "://" + host + "/api/v4"
	default:
		return scheme + "://" + host + "/api/v1"
	}
}

var scpLike = regexp.MustCompile(`^(?:[^@/]+@)?([^:/]+):(.+)$`)

// parseGitURL reads the three forms of a Git remote URL.
func parseGitURL(s string) (*gitURL, error) {
	s = strings.TrimSpace(s)
	bad := func(why string) error {
		return fmt.Errorf("catalog URL %q: %s: want https://HOST/OWNER/NAME.git, ssh://git@HOST/OWNER/NAME.git or git@HOST:OWNER/NAME.git, or set --forge, --forge-api-url and --forge-repo", redactURL(s), why)
	}
	g := &gitURL{}
	var path string
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return nil, bad("not a URL")
		}
		switch u.Scheme {
		case "https", "http", "ssh":
		default:
			return nil, bad("scheme " + u.Scheme + " is not https, http or ssh")
		}
		g.scheme, g.host = u.Scheme, strings.ToLower(u.Hostname())
		if u.Scheme != "ssh" {
			g.port = u.Port()
		}
		path = u.Path
	} else if m := scpLike.FindStringSubmatch(s); m != nil {
		g.scheme, g.host, path = "ssh", strings.ToLower(m[1]), m[2]
	} else {
		return nil, bad("not a Git URL")
	}
	if g.host == "" {
		return nil, bad("no host")
	}
	path = strings.Trim(path, "/")
	path = strings.TrimSuffix(path, ".git")
	if strings.Count(path, "/") < 1 {
		return nil, bad("the path is not OWNER/NAME")
	}
	g.repo = path
	return g, nil
}

func detectKind(host string) (string, error) {
	switch {
	case host == "github.com" || host == "www.github.com":
		return KindGitHub, nil
	case strings.Contains(host, "gitlab"):
		return KindGitLab, nil
	case strings.Contains(host, "gitea") || strings.Contains(host, "forgejo") || strings.Contains(host, "codeberg"):
		return KindGitea, nil
	}
	return "", fmt.Errorf("cannot tell the forge of catalog host %q from its name: set --forge github (GitHub Enterprise Server), gitlab or gitea (Gitea, Forgejo), and --forge-api-url if the API is not at the usual path", host)
}

// Detect tells the forge of a catalog Git URL (any of the forms of
// Options.CatalogURL) from its host name: github.com is "github"; a host
// whose name contains "gitlab" is "gitlab"; one containing "gitea",
// "forgejo" or "codeberg" is "gitea". It returns the kind, the derived API
// URL (see Options.APIURL) and the repository path. Any other host (GitHub
// Enterprise Server, a Gitea without "gitea" in its name) is an error asking
// for --forge: the kind is never guessed.
func Detect(catalogURL string) (kind, apiURL, repo string, err error) {
	g, err := parseGitURL(catalogURL)
	if err != nil {
		return "", "", "", err
	}
	kind, err = detectKind(g.host)
	if err != nil {
		return "", "", "", err
	}
	return kind, g.apiURL(kind), g.repo, nil
}

// splitRepo splits "owner/name".
func splitRepo(repo string) (owner, name string) {
	i := strings.LastIndex(repo, "/")
	return repo[:i], repo[i+1:]
}

// addLabels returns have plus the labels of add it lacks, in order.
func addLabels(have, add []string) []string {
	out := append([]string(nil), have...)
	for _, l := range add {
		found := false
		for _, h := range out {
			found = found || h == l
		}
		if !found {
			out = append(out, l)
		}
	}
	return out
}
