package forgetest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"
)

// The review endpoints of the GitHub fake (GitHub REST docs, API version
// 2022-11-28): "branch protection" (get branch protection: 404 "Branch not
// protected" when none), "repos/contents" (get repository content, of a
// file: base64 content) and "pulls/reviews" (list reviews for a pull
// request).
var (
	ghProtection = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)/branches/(.+)/protection$`)
	ghContents   = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)/contents/(.+)$`)
	ghReviews    = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)/pulls/([0-9]+)/reviews$`)
)

// ghReviewState is what the GitHub fake keeps of reviews (guarded by
// server.mu).
type ghReviewState struct {
	protected  map[string]ghProtect // by branch
	codeOwners map[string]string    // CODEOWNERS path → text
	reviews    map[int][]map[string]any
}

type ghProtect struct {
	approvals  int
	codeOwners bool
}

// Protect protects branch requiring approvals approving reviews, and the
// review of code owners when codeOwners is set, as a repository admin
// would in Settings → Branches.
func (g *GitHub) Protect(branch string, approvals int, codeOwners bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rv.protected == nil {
		g.rv.protected = map[string]ghProtect{}
	}
	g.rv.protected[branch] = ghProtect{approvals: approvals, codeOwners: codeOwners}
}

// SetCodeOwners sets the file at path (".github/CODEOWNERS") to text.
func (g *GitHub) SetCodeOwners(path, text string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rv.codeOwners == nil {
		g.rv.codeOwners = map[string]string{}
	}
	g.rv.codeOwners[path] = text
}

// Approve adds an APPROVED review of login to PR number on its head, as
// the reviewer would in the web UI.
func (g *GitHub) Approve(number int, login string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.pr(number)
	if p == nil {
		g.t.Errorf("forgetest: GitHub.Approve(%d): no pull request #%d", number, number)
		return
	}
	if g.rv.reviews == nil {
		g.rv.reviews = map[int][]map[string]any{}
	}
	g.rv.reviews[number] = append(g.rv.reviews[number], map[string]any{
		"id": len(g.rv.reviews[number]) + 1, "user": map[string]any{"login": login}, "body": "",
		"state": "APPROVED", "commit_id": p.HeadSHA, "submitted_at": time.Now().UTC().Format(time.RFC3339),
	})
}

// serveReviews answers the review endpoints; false when r is none of
// them. The caller holds g.mu and checked the authentication and headers.
func (g *GitHub) serveReviews(w http.ResponseWriter, r *http.Request) bool {
	for _, re := range []*regexp.Regexp{ghProtection, ghContents, ghReviews} {
		m := re.FindStringSubmatch(r.URL.Path)
		if m == nil {
			continue
		}
		if r.Method != http.MethodGet {
			g.bad(w, r, http.StatusNotFound, "no such endpoint in the contract")
			return true
		}
		if m[1] != g.owner || m[2] != g.name {
			ghError(w, http.StatusNotFound, "Not Found", "")
			return true
		}
		switch re {
		case ghProtection:
			p, ok := g.rv.protected[m[3]]
			if !ok {
				ghError(w, http.StatusNotFound, "Branch not protected", "/branches/branch-protection#get-branch-protection")
				return true
			}
			writeJSON(w, http.StatusOK, map[string]any{
				"url": g.URL() + r.URL.Path,
				"required_pull_request_reviews": map[string]any{
					"required_approving_review_count": p.approvals, "require_code_owner_reviews": p.codeOwners, "dismiss_stale_reviews": false,
				},
			})
		case ghContents:
			text, ok := g.rv.codeOwners[m[3]]
			if !ok {
				ghError(w, http.StatusNotFound, "Not Found", "/repos/contents#get-repository-content")
				return true
			}
			writeJSON(w, http.StatusOK, map[string]any{
				"type": "file", "encoding": "base64", "size": len(text), "name": m[3], "path": m[3],
				"content": base64.StdEncoding.EncodeToString([]byte(text)), "sha": fakeSHA(m[3], len(text)),
			})
		default:
			n, _ := strconv.Atoi(m[3])
			if g.pr(n) == nil {
				ghError(w, http.StatusNotFound, "Not Found", "/pulls/reviews#list-reviews-for-a-pull-request")
				return true
			}
			out := g.rv.reviews[n]
			if out == nil {
				out = []map[string]any{}
			}
			writeJSON(w, http.StatusOK, out)
		}
		return true
	}
	return false
}

// mergeCommit is the merge commit the fake reports for PR number.
func mergeCommit(number int) string { return fakeSHA(fmt.Sprintf("merge-%d", number), number) }
