package forgetest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/operator-publish/publish/internal/forge"
)

// GitLab is a contract fake of the GitLab REST API v4 for one project.
//
// The shapes come from GitLab's REST docs: "merge_requests" (list project
// merge requests, get single MR, create MR, update MR, merge a merge
// request), "notes" (create new merge request note), "projects" (get a
// single project), "rest/authentication" (PRIVATE-TOKEN or Bearer) and
// "rest/troubleshooting" (status codes).
type GitLab struct {
	*server
	project string
	id      int

	// guarded by server.mu
	mrs   []*glMR
	heads map[string]string
	rv    glReviewState
}

type glMR struct {
	forge.PullRequest
	autoMerge string // "merge" or "squash", "" when not set
	// checkingLeft is how many more merge requests answer 405; checking
	// is whether the last one did (detailed_merge_status "checking").
	checkingLeft int
	checking     bool
	mergedAt     *time.Time
	// pipelineOK: the MR's pipeline succeeded (PipelineSucceeded).
	pipelineOK bool
	// mergeSHA is the merge commit a merged MR reports (SetMergeCommit;
	// "": a made-up one).
	mergeSHA string
}

// NewGitLab starts the fake for project ("group/name" or
// "group/sub/name"), closed when the test ends. Pass URL() as
// forge.Options.APIURL and Token() as Options.Token.
func NewGitLab(t testing.TB, project string, opts ...Option) *GitLab {
	t.Helper()
	if strings.Count(project, "/") < 1 || strings.HasPrefix(project, "/") || strings.HasSuffix(project, "/") {
		t.Fatalf("forgetest.NewGitLab: project %q is not group/name", project)
	}
	g := &GitLab{project: project, id: 42, heads: map[string]string{}}
	g.server = newServer(t, http.HandlerFunc(g.serve), opts)
	return g
}

// URL is the API root, as --forge-api-url takes it (…/api/v4).
func (g *GitLab) URL() string { return g.srv.URL + "/api/v4" }

// Options are the forge.Options that reach this fake: its kind, URL,
// repository and token.
func (g *GitLab) Options() forge.Options {
	return forge.Options{Kind: forge.KindGitLab, APIURL: g.URL(), Repo: g.Repo(), Token: g.Token()}
}

// Repo is the project path.
func (g *GitLab) Repo() string { return g.project }

// SetHead sets the commit the fake reports at the tip of branch, as a push
// would.
func (g *GitLab) SetHead(branch, sha string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.heads[branch] = sha
	for _, m := range g.mrs {
		if m.Head == branch && m.State == "open" {
			m.HeadSHA = sha
		}
	}
}

// PRs returns every merge request, by IID, with State "open", "closed" or
// "merged" (forge's names).
func (g *GitLab) PRs() []forge.PullRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]forge.PullRequest, 0, len(g.mrs))
	for _, m := range g.mrs {
		c := m.PullRequest
		c.Labels = slices.Clone(c.Labels)
		out = append(out, c)
	}
	return out
}

// AutoMerge returns "merge" or "squash" when auto-merge was set on MR iid,
// "" otherwise.
func (g *GitLab) AutoMerge(iid int) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.mr(iid); m != nil {
		return m.autoMerge
	}
	return ""
}

// Merge merges MR iid as a person would in the web UI.
func (g *GitLab) Merge(iid int) {
	g.t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.mr(iid)
	if m == nil || m.State != "open" {
		g.t.Errorf("forgetest: GitLab.Merge(%d): no open merge request !%d", iid, iid)
		return
	}
	now := time.Now().UTC()
	m.State, m.mergedAt = "merged", &now
}

// Close closes MR iid unmerged, as a person would in the web UI.
func (g *GitLab) Close(iid int) {
	g.t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.mr(iid)
	if m == nil {
		g.t.Errorf("forgetest: GitLab.Close(%d): no merge request !%d", iid, iid)
		return
	}
	m.State = "closed"
}

func (g *GitLab) mr(iid int) *glMR {
	for _, m := range g.mrs {
		if m.Number == iid {
			return m
		}
	}
	return nil
}

// glError writes GitLab's error shape: {"message": ...} where message is a
// string or, for validation errors, a list or an object of lists.
func glError(w http.ResponseWriter, status int, msg any) {
	writeJSON(w, status, map[string]any{"message": msg})
}

func (g *GitLab) bad(w http.ResponseWriter, r *http.Request, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	g.report("GitLab", r, msg)
	writeJSON(w, status, map[string]any{"error": msg})
}

func (g *GitLab) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		g.bad(w, r, http.StatusBadRequest, "reading the body: %v", err)
		return
	}
	r = g.withBody(r, body)
	if r.Header.Get("PRIVATE-TOKEN") != g.token && r.Header.Get("Authorization") != "Bearer "+g.token {
		glError(w, http.StatusUnauthorized, "401 Unauthorized")
		return
	}
	if r.Method != http.MethodGet && len(body) > 0 && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		g.bad(w, r, http.StatusBadRequest, "Content-Type %q: the fake takes JSON bodies", r.Header.Get("Content-Type"))
		return
	}
	// The project is its ID or its URL-encoded path (…/projects/group%2Fname/…).
	parts := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/api/v4/"), "/")
	if len(parts) < 2 || parts[0] != "projects" {
		g.bad(w, r, http.StatusNotFound, "no such endpoint in the contract")
		return
	}
	pid, err := url.PathUnescape(parts[1])
	if err != nil || (pid != g.project && pid != strconv.Itoa(g.id)) {
		glError(w, http.StatusNotFound, "404 Project Not Found")
		return
	}
	rest := parts[2:]
	g.mu.Lock()
	defer g.mu.Unlock()
	iid := 0
	if len(rest) >= 2 && rest[0] == "merge_requests" {
		if iid, err = strconv.Atoi(rest[1]); err != nil || iid <= 0 {
			g.bad(w, r, http.StatusNotFound, "merge request IID %q is not a number", rest[1])
			return
		}
	}
	switch path := strings.Join(rest, "/"); {
	case path == "" && r.Method == http.MethodGet:
		g.getProject(w, r)
	case path == "merge_requests" && r.Method == http.MethodGet:
		g.listMRs(w, r)
	case path == "merge_requests" && r.Method == http.MethodPost:
		g.createMR(w, r, body)
	case len(rest) == 2 && iid > 0 && r.Method == http.MethodGet:
		g.getMR(w, r, iid)
	case len(rest) == 2 && iid > 0 && r.Method == http.MethodPut:
		g.updateMR(w, r, iid, body)
	case len(rest) == 3 && iid > 0 && rest[2] == "merge" && r.Method == http.MethodPut:
		g.mergeMR(w, r, iid, body)
	case len(rest) == 3 && iid > 0 && rest[2] == "notes" && r.Method == http.MethodPost:
		g.createNote(w, r, iid, body)
	case g.serveReviews(w, r, rest, iid):
	default:
		g.bad(w, r, http.StatusNotFound, "no such endpoint in the contract")
	}
}

func (g *GitLab) decode(w http.ResponseWriter, r *http.Request, body []byte, fields map[string]string) (map[string]any, bool) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		g.bad(w, r, http.StatusBadRequest, "malformed JSON body: %s", body)
		return nil, false
	}
	for k, v := range m {
		want, ok := fields[k]
		if !ok {
			g.bad(w, r, http.StatusBadRequest, "%q is not a parameter of this endpoint", k)
			return nil, false
		}
		// GitLab takes labels as a comma-separated string or an array.
		if want == "labels" {
			if _, ok := v.(string); ok {
				continue
			}
			want = "array"
		}
		if !jsonType(v, want) {
			g.bad(w, r, http.StatusBadRequest, "%q is %T, want %s", k, v, want)
			return nil, false
		}
	}
	return m, true
}

func labelList(v any) []string {
	var out []string
	switch l := v.(type) {
	case string:
		for _, s := range strings.Split(l, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	case []any:
		for _, s := range l {
			if s, ok := s.(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// readOnly answers a write of a Reporter-role token.
func (g *GitLab) readOnly(w http.ResponseWriter) bool {
	if g.cfg.readOnly {
		glError(w, http.StatusForbidden, "403 Forbidden")
		return true
	}
	return false
}

func glState(s string) string {
	if s == "open" {
		return "opened"
	}
	return s
}

func (g *GitLab) mrJSON(m *glMR) map[string]any {
	labels := append([]string{}, m.Labels...)
	return map[string]any{
		"id": 1000 + m.Number, "iid": m.Number, "project_id": g.id,
		"title": m.Title, "description": m.Body, "state": glState(m.State),
		"source_branch": m.Head, "target_branch": m.Base,
		"source_project_id": g.id, "target_project_id": g.id,
		"labels": labels, "draft": false, "sha": m.HeadSHA,
		"merge_when_pipeline_succeeds": m.autoMerge != "",
		"squash":                       m.autoMerge == "squash",
		"detailed_merge_status":        map[bool]string{true: "checking", false: "mergeable"}[m.checking],
		"web_url":                      fmt.Sprintf("%s/%s/-/merge_requests/%d", g.srv.URL, g.project, m.Number),
		"author":                       map[string]any{"username": "publish-bot"},
		"merged_at":                    m.mergedAt,
		"merge_commit_sha":             map[bool]string{true: cmp.Or(m.mergeSHA, mergeCommit(m.Number))}[m.mergedAt != nil],
	}
}

// getProject: permissions.project_access.access_level is 30 (Developer), or
// 20 (Reporter) with ReadOnly.
func (g *GitLab) getProject(w http.ResponseWriter, r *http.Request) {
	level := 30
	if g.cfg.readOnly {
		level = 20
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": g.id, "path_with_namespace": g.project, "default_branch": "main",
		"web_url":     g.srv.URL + "/" + g.project,
		"permissions": map[string]any{"project_access": map[string]any{"access_level": level, "notification_level": 3}, "group_access": nil},
	})
}

// listMRs: query state (opened, closed, locked, merged, all),
// source_branch, target_branch, per_page, page, and others the fake ignores.
func (g *GitLab) listMRs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	allowed := []string{"state", "source_branch", "target_branch", "per_page", "page", "order_by", "sort", "labels", "view"}
	for k := range q {
		if !slices.Contains(allowed, k) {
			g.bad(w, r, http.StatusBadRequest, "query parameter %q is not one the fake knows of list project merge requests", k)
			return
		}
	}
	state := q.Get("state")
	if state != "" && !slices.Contains([]string{"opened", "closed", "locked", "merged", "all"}, state) {
		glError(w, http.StatusBadRequest, map[string]any{"error": "state does not have a valid value"})
		return
	}
	out := []map[string]any{}
	for _, m := range g.mrs {
		if state != "" && state != "all" && glState(m.State) != state {
			continue
		}
		if s := q.Get("source_branch"); s != "" && m.Head != s {
			continue
		}
		if s := q.Get("target_branch"); s != "" && m.Base != s {
			continue
		}
		out = append(out, g.mrJSON(m))
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *GitLab) tooLong(w http.ResponseWriter, m map[string]any) bool {
	if d, ok := str(m, "description"); ok && len(d) > forge.GitLabMaxBody {
		glError(w, http.StatusBadRequest, map[string][]string{"description": {"is too long (maximum is 1048576 characters)"}})
		return true
	}
	return false
}

// createMR: required source_branch, target_branch, title; optional
// description, labels, and others. 409 when an open MR exists for the
// source branch.
func (g *GitLab) createMR(w http.ResponseWriter, r *http.Request, body []byte) {
	m, ok := g.decode(w, r, body, map[string]string{
		"source_branch": "string", "target_branch": "string", "title": "string", "description": "string",
		"labels": "labels", "remove_source_branch": "boolean", "squash": "boolean", "allow_collaboration": "boolean",
	})
	if !ok {
		return
	}
	for _, f := range []string{"source_branch", "target_branch", "title"} {
		if s, _ := str(m, f); s == "" {
			g.bad(w, r, http.StatusBadRequest, "%s is missing", f)
			return
		}
	}
	if g.readOnly(w) || g.tooLong(w, m) {
		return
	}
	src, _ := str(m, "source_branch")
	dst, _ := str(m, "target_branch")
	for _, o := range g.mrs {
		if o.State == "open" && o.Head == src && o.Base == dst {
			glError(w, http.StatusConflict, []string{fmt.Sprintf("Another open merge request already exists for this source branch: !%d", o.Number)})
			return
		}
	}
	n := len(g.mrs) + 1
	title, _ := str(m, "title")
	desc, _ := str(m, "description")
	sha := g.heads[src]
	if sha == "" {
		sha = fakeSHA(src, n)
	}
	mr := &glMR{PullRequest: forge.PullRequest{
		Number: n, URL: fmt.Sprintf("%s/%s/-/merge_requests/%d", g.srv.URL, g.project, n),
		Title: title, Body: desc, Head: src, Base: dst, HeadSHA: sha, State: "open", Labels: labelList(m["labels"]),
	}, checkingLeft: g.cfg.checking}
	g.mrs = append(g.mrs, mr)
	writeJSON(w, http.StatusCreated, g.mrJSON(mr))
}

func (g *GitLab) getMR(w http.ResponseWriter, r *http.Request, iid int) {
	m := g.mr(iid)
	if m == nil {
		glError(w, http.StatusNotFound, "404 Not found")
		return
	}
	writeJSON(w, http.StatusOK, g.mrJSON(m))
}

// updateMR: at least one of title, description, labels, add_labels,
// remove_labels, state_event (close, reopen), target_branch, and others.
func (g *GitLab) updateMR(w http.ResponseWriter, r *http.Request, iid int, body []byte) {
	m, ok := g.decode(w, r, body, map[string]string{
		"title": "string", "description": "string", "target_branch": "string", "state_event": "string",
		"labels": "labels", "add_labels": "labels", "remove_labels": "labels",
		"remove_source_branch": "boolean", "squash": "boolean", "discussion_locked": "boolean", "allow_collaboration": "boolean",
	})
	if !ok {
		return
	}
	if len(m) == 0 {
		g.bad(w, r, http.StatusBadRequest, "at least one parameter must be given")
		return
	}
	if s, ok := str(m, "state_event"); ok && s != "close" && s != "reopen" {
		g.bad(w, r, http.StatusBadRequest, "state_event %q: want close or reopen", s)
		return
	}
	mr := g.mr(iid)
	if mr == nil {
		glError(w, http.StatusNotFound, "404 Not found")
		return
	}
	if g.readOnly(w) || g.tooLong(w, m) {
		return
	}
	if s, ok := str(m, "title"); ok {
		mr.Title = s
	}
	if s, ok := str(m, "description"); ok {
		mr.Body = s
	}
	if s, ok := str(m, "target_branch"); ok {
		mr.Base = s
	}
	if v, ok := m["labels"]; ok {
		mr.Labels = labelList(v)
	}
	for _, l := range labelList(m["add_labels"]) {
		if !slices.Contains(mr.Labels, l) {
			mr.Labels = append(mr.Labels, l)
		}
	}
	for _, l := range labelList(m["remove_labels"]) {
		mr.Labels = slices.DeleteFunc(mr.Labels, func(s string) bool { return s == l })
	}
	if s, ok := str(m, "state_event"); ok && mr.State != "merged" {
		mr.State = map[string]string{"close": "closed", "reopen": "open"}[s]
	}
	writeJSON(w, http.StatusOK, g.mrJSON(mr))
}

// mergeMR: optional auto_merge, merge_when_pipeline_succeeds, squash, sha,
// merge_commit_message, squash_commit_message, should_remove_source_branch.
// 401 without the right to merge, 405 when the MR is not open, 409 when sha
// is not the head. With auto_merge (or merge_when_pipeline_succeeds) the
// fake records it and leaves the MR open, as GitLab does while a pipeline
// runs; without, it merges.
func (g *GitLab) mergeMR(w http.ResponseWriter, r *http.Request, iid int, body []byte) {
	m := map[string]any{}
	if len(body) > 0 {
		var ok bool
		if m, ok = g.decode(w, r, body, map[string]string{
			"auto_merge": "boolean", "merge_when_pipeline_succeeds": "boolean", "squash": "boolean", "sha": "string",
			"merge_commit_message": "string", "squash_commit_message": "string", "should_remove_source_branch": "boolean",
		}); !ok {
			return
		}
	}
	mr := g.mr(iid)
	if mr == nil {
		glError(w, http.StatusNotFound, "404 Not found")
		return
	}
	if g.cfg.readOnly {
		glError(w, http.StatusUnauthorized, "401 Unauthorized")
		return
	}
	if mr.State != "open" {
		glError(w, http.StatusMethodNotAllowed, "405 Method Not Allowed")
		return
	}
	if mr.checkingLeft > 0 {
		mr.checkingLeft--
		mr.checking = true
		glError(w, http.StatusMethodNotAllowed, "405 Method Not Allowed")
		return
	}
	mr.checking = false
	if s, ok := str(m, "sha"); ok && s != mr.HeadSHA {
		glError(w, http.StatusConflict, "SHA does not match HEAD of source branch: "+mr.HeadSHA)
		return
	}
	auto, _ := m["auto_merge"].(bool)
	mwps, _ := m["merge_when_pipeline_succeeds"].(bool)
	squash, _ := m["squash"].(bool)
	if auto || mwps {
		mr.autoMerge = "merge"
		if squash {
			mr.autoMerge = "squash"
		}
	} else {
		mr.State = "merged"
	}
	writeJSON(w, http.StatusOK, g.mrJSON(mr))
}

// createNote: required body (notes, create new merge request note).
func (g *GitLab) createNote(w http.ResponseWriter, r *http.Request, iid int, body []byte) {
	m, ok := g.decode(w, r, body, map[string]string{"body": "string", "internal": "boolean", "created_at": "string", "merge_request_diff_head_sha": "string"})
	if !ok {
		return
	}
	text, _ := str(m, "body")
	if text == "" {
		g.bad(w, r, http.StatusBadRequest, "body is missing")
		return
	}
	if g.mr(iid) == nil {
		glError(w, http.StatusNotFound, "404 Not found")
		return
	}
	if g.readOnly(w) {
		return
	}
	g.comments[iid] = append(g.comments[iid], text)
	writeJSON(w, http.StatusCreated, map[string]any{
		"id": len(g.comments[iid]), "body": text, "noteable_type": "MergeRequest", "noteable_iid": iid,
		"author": map[string]any{"username": "publish-bot"}, "system": false,
	})
}
