package forgetest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/operator-publish/publish/internal/forge"
)

// GitHub is a contract fake of the GitHub REST API (and the one GraphQL
// mutation forge uses) for one repository, served like GitHub Enterprise
// Server: REST under /api/v3, GraphQL at /api/graphql.
//
// The shapes come from GitHub's REST docs (API version 2022-11-28):
// "pulls" (list, get, create, update, merge a pull request), "issues/
// comments" (create an issue comment), "issues/labels" (add labels to an
// issue), "repos" (get a repository), "Troubleshooting the REST API"
// (X-Accepted-GitHub-Permissions), and the GraphQL reference for
// enablePullRequestAutoMerge.
type GitHub struct {
	*server
	owner, name string

	// guarded by server.mu
	prs    []*ghPR
	heads  map[string]string
	labels map[string]int64
	rv     ghReviewState
}

type ghPR struct {
	forge.PullRequest
	autoMerge string
	mergedAt  *time.Time
}

// NewGitHub starts the fake for repo ("owner/name"), closed when the test
// ends. Pass URL() as forge.Options.APIURL and Token() as Options.Token.
func NewGitHub(t testing.TB, repo string, opts ...Option) *GitHub {
	t.Helper()
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || strings.Contains(name, "/") {
		t.Fatalf("forgetest.NewGitHub: repo %q is not owner/name", repo)
	}
	g := &GitHub{owner: owner, name: name, heads: map[string]string{}, labels: map[string]int64{}}
	g.server = newServer(t, http.HandlerFunc(g.serve), opts)
	return g
}

// URL is the REST API root, as --forge-api-url takes it (…/api/v3).
func (g *GitHub) URL() string { return g.srv.URL + "/api/v3" }

// Options are the forge.Options that reach this fake: its kind, URL,
// repository and token.
func (g *GitHub) Options() forge.Options {
	return forge.Options{Kind: forge.KindGitHub, APIURL: g.URL(), Repo: g.Repo(), Token: g.Token()}
}

// Repo is "owner/name".
func (g *GitHub) Repo() string { return g.owner + "/" + g.name }

// SetHead sets the commit the fake reports at the tip of branch (for PRs
// opened from it afterwards, and for open ones now), as a push would.
func (g *GitHub) SetHead(branch, sha string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.heads[branch] = sha
	for _, p := range g.prs {
		if p.Head == branch && p.State == "open" {
			p.HeadSHA = sha
		}
	}
}

// PRs returns every pull request, open, closed or merged, by number.
func (g *GitHub) PRs() []forge.PullRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]forge.PullRequest, 0, len(g.prs))
	for _, p := range g.prs {
		c := p.PullRequest
		c.Labels = slices.Clone(c.Labels)
		out = append(out, c)
	}
	return out
}

// AutoMerge returns the merge method auto-merge was enabled with on PR
// number ("merge", "squash", "rebase"), or "".
func (g *GitHub) AutoMerge(number int) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.pr(number); p != nil {
		return p.autoMerge
	}
	return ""
}

// Merge merges PR number as a person would in the web UI. It fails the
// test when the PR is not open.
func (g *GitHub) Merge(number int) {
	g.t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.pr(number)
	if p == nil || p.State != "open" {
		g.t.Errorf("forgetest: GitHub.Merge(%d): no open pull request #%d", number, number)
		return
	}
	now := time.Now().UTC()
	p.State, p.mergedAt = "merged", &now
}

// Close closes PR number unmerged, as a person would in the web UI.
func (g *GitHub) Close(number int) {
	g.t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.pr(number)
	if p == nil {
		g.t.Errorf("forgetest: GitHub.Close(%d): no pull request #%d", number, number)
		return
	}
	p.State = "closed"
}

func (g *GitHub) pr(number int) *ghPR {
	for _, p := range g.prs {
		if p.Number == number {
			return p
		}
	}
	return nil
}

func (g *GitHub) nodeID(number int) string {
	return "PR_" + base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s/%s#%d", g.owner, g.name, number)))
}

// ghError writes GitHub's error shape: {"message", "documentation_url",
// "errors"?, "status"}.
func ghError(w http.ResponseWriter, status int, msg, doc string, errs ...map[string]string) {
	body := map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest" + doc, "status": strconv.Itoa(status)}
	if len(errs) > 0 {
		body["errors"] = errs
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// bad fails the test for a request outside the contract and answers it.
func (g *GitHub) bad(w http.ResponseWriter, r *http.Request, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	g.report("GitHub", r, msg)
	ghError(w, status, msg, "")
}

var (
	ghRepo     = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)$`)
	ghPulls    = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)/pulls$`)
	ghPull     = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)/pulls/([0-9]+)$`)
	ghMerge    = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)/pulls/([0-9]+)/merge$`)
	ghLabels   = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)/issues/([0-9]+)/labels$`)
	ghComments = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)/issues/([0-9]+)/comments$`)
)

// githubMediaType is a GitHub media type: application/vnd.github+json,
// application/vnd.github.v3+json, a graduated preview such as
// application/vnd.github.mercy-preview+json, or a body format such as
// application/vnd.github.raw+json (REST docs "Media types").
var githubMediaType = regexp.MustCompile(`^application/vnd\.github(\.[a-z0-9-]+)*\+json$`)

// githubAccept tells whether every media type of an Accept header is one
// GitHub serves JSON for.
func githubAccept(a string) bool {
	if a == "" {
		return false
	}
	for _, t := range strings.Split(a, ",") {
		t = strings.TrimSpace(t)
		if t != "application/json" && !githubMediaType.MatchString(t) {
			return false
		}
	}
	return true
}

// githubAPIVersions are the REST API versions GitHub serves (REST docs
// "API Versions").
var githubAPIVersions = []string{"2022-11-28", "2026-03-10"}

func (g *GitHub) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		g.bad(w, r, http.StatusBadRequest, "reading the body: %v", err)
		return
	}
	r = g.withBody(r, body)

	// Authentication: "Authorization: Bearer TOKEN" (or the older
	// "token TOKEN"); GitHub answers 401 "Bad credentials" otherwise.
	auth := r.Header.Get("Authorization")
	if auth != "Bearer "+g.token && auth != "token "+g.token {
		ghError(w, http.StatusUnauthorized, "Bad credentials", "")
		return
	}
	if r.URL.Path == "/api/graphql" {
		g.graphql(w, r, body)
		return
	}
	if a := r.Header.Get("Accept"); !githubAccept(a) {
		g.bad(w, r, http.StatusUnsupportedMediaType, "Accept %q: want application/vnd.github+json", a)
		return
	}
	if v := r.Header.Get("X-GitHub-Api-Version"); !slices.Contains(githubAPIVersions, v) {
		g.bad(w, r, http.StatusBadRequest, "X-GitHub-Api-Version %q: want one of %v", v, githubAPIVersions)
		return
	}
	if r.Method != http.MethodGet && len(body) > 0 && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		g.bad(w, r, http.StatusUnsupportedMediaType, "Content-Type %q: want application/json", r.Header.Get("Content-Type"))
		return
	}

	route := func(re *regexp.Regexp) (int, bool) {
		m := re.FindStringSubmatch(r.URL.Path)
		if m == nil {
			return 0, false
		}
		if m[1] != g.owner || m[2] != g.name {
			return -1, true
		}
		n := 0
		if len(m) > 3 {
			n, _ = strconv.Atoi(m[3])
		}
		return n, true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rt := range []struct {
		re     *regexp.Regexp
		method string
		h      func(http.ResponseWriter, *http.Request, int, []byte)
	}{
		{ghRepo, http.MethodGet, g.getRepo},
		{ghPulls, http.MethodGet, g.listPulls},
		{ghPulls, http.MethodPost, g.createPull},
		{ghPull, http.MethodGet, g.getPull},
		{ghPull, http.MethodPatch, g.updatePull},
		{ghMerge, http.MethodPut, g.mergePull},
		{ghLabels, http.MethodPost, g.addLabels},
		{ghComments, http.MethodPost, g.createComment},
	} {
		n, ok := route(rt.re)
		if !ok || r.Method != rt.method {
			continue
		}
		if n < 0 {
			// GitHub hides what the token cannot see behind a 404.
			ghError(w, http.StatusNotFound, "Not Found", "")
			return
		}
		rt.h(w, r, n, body)
		return
	}
	if !g.serveReviews(w, r) {
		g.bad(w, r, http.StatusNotFound, "no such endpoint in the contract")
	}
}

// readOnly answers a write of a read-only token as GitHub does for a
// fine-grained token without the permission.
func (g *GitHub) readOnly(w http.ResponseWriter, perms, doc string) bool {
	if !g.cfg.readOnly {
		return false
	}
	w.Header().Set("X-Accepted-GitHub-Permissions", perms)
	ghError(w, http.StatusForbidden, "Resource not accessible by personal access token", doc)
	return true
}

// decode reads a JSON object body, failing the test on malformed JSON,
// unknown fields or fields of the wrong type (GitHub answers 400 "Problems
// parsing JSON" or 422).
func (g *GitHub) decode(w http.ResponseWriter, r *http.Request, body []byte, fields map[string]string) (map[string]any, bool) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		g.bad(w, r, http.StatusBadRequest, "Problems parsing JSON: %s", body)
		return nil, false
	}
	for k, v := range m {
		want, ok := fields[k]
		if !ok {
			g.bad(w, r, http.StatusUnprocessableEntity, "field %q is not a parameter of this endpoint", k)
			return nil, false
		}
		if !jsonType(v, want) {
			g.bad(w, r, http.StatusUnprocessableEntity, "field %q is %T, want %s", k, v, want)
			return nil, false
		}
	}
	return m, true
}

func jsonType(v any, want string) bool {
	switch want {
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string|null":
		_, ok := v.(string)
		return ok || v == nil
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return false
}

func str(m map[string]any, k string) (string, bool) {
	s, ok := m[k].(string)
	return s, ok
}

func (g *GitHub) prJSON(p *ghPR) map[string]any {
	repo := map[string]any{"full_name": g.owner + "/" + g.name, "name": g.name, "owner": map[string]any{"login": g.owner}}
	labels := []map[string]any{}
	for _, l := range p.Labels {
		labels = append(labels, map[string]any{"id": g.labels[l], "name": l, "color": "ededed"})
	}
	state := p.State
	if state == "merged" {
		state = "closed"
	}
	return map[string]any{
		"url":      g.URL() + fmt.Sprintf("/repos/%s/%s/pulls/%d", g.owner, g.name, p.Number),
		"html_url": g.srv.URL + fmt.Sprintf("/%s/%s/pull/%d", g.owner, g.name, p.Number),
		"id":       p.Number, "node_id": p.NodeID, "number": p.Number,
		"state": state, "title": p.Title, "body": p.Body, "draft": false,
		"labels": labels, "merged": p.State == "merged", "merged_at": p.mergedAt, "merge_commit_sha": mergeCommit(p.Number),
		"user": map[string]any{"login": "publish-bot"},
		"head": map[string]any{"ref": p.Head, "sha": p.HeadSHA, "label": g.owner + ":" + p.Head, "repo": repo},
		"base": map[string]any{"ref": p.Base, "sha": fakeSHA(p.Base, 0), "label": g.owner + ":" + p.Base, "repo": repo},
	}
}

func (g *GitHub) getRepo(w http.ResponseWriter, r *http.Request, _ int, _ []byte) {
	writeJSON(w, http.StatusOK, map[string]any{
		"id": 1, "node_id": "R_1", "name": g.name, "full_name": g.owner + "/" + g.name, "private": true,
		"owner":       map[string]any{"login": g.owner},
		"html_url":    g.srv.URL + "/" + g.owner + "/" + g.name,
		"permissions": map[string]any{"admin": false, "maintain": false, "push": !g.cfg.readOnly, "triage": !g.cfg.readOnly, "pull": true},
	})
}

// listPulls: query state (open, closed, all), head ("user:ref-name"),
// base, sort, direction, per_page, page.
func (g *GitHub) listPulls(w http.ResponseWriter, r *http.Request, _ int, _ []byte) {
	q := r.URL.Query()
	for k := range q {
		if !slices.Contains([]string{"state", "head", "base", "sort", "direction", "per_page", "page"}, k) {
			g.bad(w, r, http.StatusUnprocessableEntity, "query parameter %q is not one of list pull requests", k)
			return
		}
	}
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	if !slices.Contains([]string{"open", "closed", "all"}, state) {
		g.bad(w, r, http.StatusUnprocessableEntity, "state %q: want open, closed or all", state)
		return
	}
	headUser, headRef := "", ""
	if h := q.Get("head"); h != "" {
		var ok bool
		if headUser, headRef, ok = strings.Cut(h, ":"); !ok {
			g.bad(w, r, http.StatusUnprocessableEntity, "head %q: want user:ref-name", h)
			return
		}
	}
	out := []map[string]any{}
	for _, p := range g.prs {
		open := p.State == "open"
		if (state == "open" && !open) || (state == "closed" && open) {
			continue
		}
		if headRef != "" && (headUser != g.owner || p.Head != headRef) {
			continue
		}
		if b := q.Get("base"); b != "" && p.Base != b {
			continue
		}
		out = append(out, g.prJSON(p))
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *GitHub) bodyTooLong(w http.ResponseWriter, m map[string]any, doc string) bool {
	if b, ok := str(m, "body"); ok && utf8.RuneCountInString(b) > forge.GitHubMaxBody {
		ghError(w, http.StatusUnprocessableEntity, "Validation Failed", doc,
			map[string]string{"resource": "PullRequest", "code": "custom", "field": "body", "message": "body is too long (maximum is 65536 characters)"})
		return true
	}
	return false
}

// createPull: required head and base, title (or issue); optional body,
// head_repo, maintainer_can_modify, draft, issue.
func (g *GitHub) createPull(w http.ResponseWriter, r *http.Request, _ int, body []byte) {
	const doc = "/pulls/pulls#create-a-pull-request"
	m, ok := g.decode(w, r, body, map[string]string{
		"title": "string", "head": "string", "head_repo": "string", "base": "string", "body": "string",
		"maintainer_can_modify": "boolean", "draft": "boolean",
	})
	if !ok {
		return
	}
	for _, f := range []string{"title", "head", "base"} {
		if s, _ := str(m, f); s == "" {
			g.bad(w, r, http.StatusUnprocessableEntity, "missing required field %q", f)
			return
		}
	}
	if g.readOnly(w, "pull_requests=write", doc) {
		return
	}
	head, _ := str(m, "head")
	base, _ := str(m, "base")
	if u, ref, ok := strings.Cut(head, ":"); ok {
		if u != g.owner {
			g.bad(w, r, http.StatusUnprocessableEntity, "head %q: the fake serves same-repository pull requests only", head)
			return
		}
		head = ref
	}
	if g.bodyTooLong(w, m, doc) {
		return
	}
	if head == base {
		ghError(w, http.StatusUnprocessableEntity, "Validation Failed", doc,
			map[string]string{"resource": "PullRequest", "code": "custom", "message": "No commits between " + base + " and " + head})
		return
	}
	for _, p := range g.prs {
		if p.State == "open" && p.Head == head && p.Base == base {
			ghError(w, http.StatusUnprocessableEntity, "Validation Failed", doc,
				map[string]string{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for " + g.owner + ":" + head + "."})
			return
		}
	}
	n := len(g.prs) + 1
	title, _ := str(m, "title")
	text, _ := str(m, "body")
	sha := g.heads[head]
	if sha == "" {
		sha = fakeSHA(head, n)
	}
	p := &ghPR{PullRequest: forge.PullRequest{
		Number: n, URL: g.srv.URL + fmt.Sprintf("/%s/%s/pull/%d", g.owner, g.name, n),
		Title: title, Body: text, Head: head, Base: base, HeadSHA: sha, State: "open", NodeID: g.nodeID(n),
	}}
	g.prs = append(g.prs, p)
	writeJSON(w, http.StatusCreated, g.prJSON(p))
}

func (g *GitHub) getPull(w http.ResponseWriter, r *http.Request, n int, _ []byte) {
	p := g.pr(n)
	if p == nil {
		ghError(w, http.StatusNotFound, "Not Found", "/pulls/pulls#get-a-pull-request")
		return
	}
	writeJSON(w, http.StatusOK, g.prJSON(p))
}

// updatePull: optional title, body, state (open, closed), base,
// maintainer_can_modify.
func (g *GitHub) updatePull(w http.ResponseWriter, r *http.Request, n int, body []byte) {
	const doc = "/pulls/pulls#update-a-pull-request"
	m, ok := g.decode(w, r, body, map[string]string{
		"title": "string", "body": "string", "state": "string", "base": "string", "maintainer_can_modify": "boolean",
	})
	if !ok {
		return
	}
	if s, ok := str(m, "state"); ok && s != "open" && s != "closed" {
		g.bad(w, r, http.StatusUnprocessableEntity, "state %q: want open or closed", s)
		return
	}
	p := g.pr(n)
	if p == nil {
		ghError(w, http.StatusNotFound, "Not Found", doc)
		return
	}
	if g.readOnly(w, "pull_requests=write", doc) || g.bodyTooLong(w, m, doc) {
		return
	}
	if s, ok := str(m, "title"); ok {
		p.Title = s
	}
	if s, ok := str(m, "body"); ok {
		p.Body = s
	}
	if s, ok := str(m, "base"); ok {
		p.Base = s
	}
	if s, ok := str(m, "state"); ok && p.State != "merged" {
		p.State = s
	}
	writeJSON(w, http.StatusOK, g.prJSON(p))
}

// mergePull: optional commit_title, commit_message, sha, merge_method;
// 405 when not mergeable, 409 when sha is not the head.
func (g *GitHub) mergePull(w http.ResponseWriter, r *http.Request, n int, body []byte) {
	const doc = "/pulls/pulls#merge-a-pull-request"
	m, ok := g.decode(w, r, body, map[string]string{"commit_title": "string", "commit_message": "string", "sha": "string", "merge_method": "string"})
	if !ok {
		return
	}
	if s, ok := str(m, "merge_method"); ok && !slices.Contains([]string{"merge", "squash", "rebase"}, s) {
		g.bad(w, r, http.StatusUnprocessableEntity, "merge_method %q: want merge, squash or rebase", s)
		return
	}
	p := g.pr(n)
	if p == nil {
		ghError(w, http.StatusNotFound, "Not Found", doc)
		return
	}
	if g.readOnly(w, "contents=write", doc) {
		return
	}
	if p.State != "open" {
		ghError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable", doc)
		return
	}
	if s, ok := str(m, "sha"); ok && s != p.HeadSHA {
		ghError(w, http.StatusConflict, "Head branch was modified. Review and try the merge again.", doc)
		return
	}
	now := time.Now().UTC()
	p.State, p.mergedAt = "merged", &now
	writeJSON(w, http.StatusOK, map[string]any{"sha": fakeSHA(p.Base, n), "merged": true, "message": "Pull Request successfully merged"})
}

// addLabels: the body is {"labels": [..]} or a bare array of names
// (issues/labels, add labels to an issue); missing labels are created;
// the answer is every label on the issue.
func (g *GitHub) addLabels(w http.ResponseWriter, r *http.Request, n int, body []byte) {
	const doc = "/issues/labels#add-labels-to-an-issue"
	var names []string
	if err := json.Unmarshal(body, &names); err != nil {
		var obj struct {
			Labels []string `json:"labels"`
		}
		if err := json.Unmarshal(body, &obj); err != nil || obj.Labels == nil {
			g.bad(w, r, http.StatusUnprocessableEntity, "body %s: want {\"labels\": [names]} or [names]", body)
			return
		}
		names = obj.Labels
	}
	if len(names) == 0 {
		g.bad(w, r, http.StatusUnprocessableEntity, "no labels given")
		return
	}
	p := g.pr(n)
	if p == nil {
		ghError(w, http.StatusNotFound, "Not Found", doc)
		return
	}
	if g.readOnly(w, "issues=write; pull_requests=write", doc) {
		return
	}
	for _, l := range names {
		if _, ok := g.labels[l]; !ok {
			g.labels[l] = int64(len(g.labels) + 1)
		}
		if !slices.Contains(p.Labels, l) {
			p.Labels = append(p.Labels, l)
		}
	}
	out := []map[string]any{}
	for _, l := range p.Labels {
		out = append(out, map[string]any{"id": g.labels[l], "name": l, "color": "ededed", "default": false})
	}
	writeJSON(w, http.StatusOK, out)
}

// createComment: required body (issues/comments, create an issue comment).
func (g *GitHub) createComment(w http.ResponseWriter, r *http.Request, n int, body []byte) {
	const doc = "/issues/comments#create-an-issue-comment"
	m, ok := g.decode(w, r, body, map[string]string{"body": "string"})
	if !ok {
		return
	}
	text, _ := str(m, "body")
	if text == "" {
		g.bad(w, r, http.StatusUnprocessableEntity, "missing required field \"body\"")
		return
	}
	if g.pr(n) == nil {
		ghError(w, http.StatusNotFound, "Not Found", doc)
		return
	}
	if g.readOnly(w, "issues=write; pull_requests=write", doc) {
		return
	}
	g.comments[n] = append(g.comments[n], text)
	id := 0
	for _, cs := range g.comments {
		id += len(cs)
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"id": id, "node_id": fmt.Sprintf("IC_%d", id), "body": text, "user": map[string]any{"login": "publish-bot"},
		"html_url": g.srv.URL + fmt.Sprintf("/%s/%s/pull/%d#issuecomment-%d", g.owner, g.name, n, id),
	})
}

// graphql serves the one mutation forge sends: enablePullRequestAutoMerge
// with variables id, method (MERGE, SQUASH, REBASE) and head (the expected
// head commit, or null). GraphQL errors come with status 200.
func (g *GitHub) graphql(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost {
		g.bad(w, r, http.StatusNotFound, "GraphQL takes POST")
		return
	}
	var req struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if err := json.Unmarshal(body, &req); err != nil || !strings.Contains(req.Query, "enablePullRequestAutoMerge") ||
		!strings.Contains(req.Query, "pullRequestId:") {
		g.bad(w, r, http.StatusBadRequest, "not the enablePullRequestAutoMerge mutation: %s", body)
		return
	}
	id, _ := req.Variables["id"].(string)
	method, _ := req.Variables["method"].(string)
	if !slices.Contains([]string{"MERGE", "SQUASH", "REBASE"}, method) {
		g.bad(w, r, http.StatusBadRequest, "mergeMethod %q: want MERGE, SQUASH or REBASE (PullRequestMergeMethod)", method)
		return
	}
	gqlErr := func(typ, msg string) {
		writeJSON(w, http.StatusOK, map[string]any{
			"data":   map[string]any{"enablePullRequestAutoMerge": nil},
			"errors": []map[string]any{{"type": typ, "path": []string{"enablePullRequestAutoMerge"}, "message": msg}},
		})
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var p *ghPR
	for _, c := range g.prs {
		if c.NodeID == id {
			p = c
		}
	}
	switch {
	case p == nil:
		gqlErr("NOT_FOUND", fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id))
	case g.cfg.readOnly:
		gqlErr("FORBIDDEN", "Resource not accessible by personal access token")
	case g.cfg.noAutoMerge:
		gqlErr("UNPROCESSABLE", "Pull request Auto merge is not allowed for this repository")
	case p.State != "open":
		gqlErr("UNPROCESSABLE", "Pull request is closed")
	case req.Variables["head"] != nil && req.Variables["head"] != p.HeadSHA:
		gqlErr("UNPROCESSABLE", "Expected head oid does not match the pull request head")
	case g.cfg.mergeable:
		gqlErr("UNPROCESSABLE", "Pull request Pull request is in clean status")
	default:
		p.autoMerge = strings.ToLower(method)
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{
			"enablePullRequestAutoMerge": map[string]any{"pullRequest": map[string]any{"number": p.Number}},
		}})
	}
}
