package forgetest

import (
	"net/http"
	"slices"
	"strings"
	"time"
)

// The approval endpoints of the GitLab fake (GitLab REST docs
// "merge_request_approvals"): get project-level rules (GET
// /projects/:id/approval_rules) and get the configuration of a single
// merge request (GET /projects/:id/merge_requests/:iid/approvals).

// glReviewState is what the GitLab fake keeps of approvals (guarded by
// server.mu).
type glReviewState struct {
	rules     []map[string]any
	approvals map[int][]string
}

// AddApprovalRule adds a project approval rule requiring approvals
// approvals of users (usernames) or groups (full paths) on branch, as a
// maintainer would in Settings → Merge requests.
func (g *GitLab) AddApprovalRule(name string, approvals int, branch string, users, groups []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	us, gs := []map[string]any{}, []map[string]any{}
	for i, u := range users {
		us = append(us, map[string]any{"id": 100 + i, "username": u, "name": u, "state": "active"})
	}
	for i, p := range groups {
		gs = append(gs, map[string]any{"id": 200 + i, "name": p[strings.LastIndex(p, "/")+1:], "path": p[strings.LastIndex(p, "/")+1:], "full_path": p})
	}
	g.rv.rules = append(g.rv.rules, map[string]any{
		"id": len(g.rv.rules) + 1, "name": name, "rule_type": "regular", "approvals_required": approvals,
		"users": us, "groups": gs, "eligible_approvers": us, "contains_hidden_groups": false,
		"protected_branches":                []map[string]any{{"id": 1, "name": branch}},
		"applies_to_all_protected_branches": false,
	})
}

// Approve records username's approval of MR iid, as the reviewer would
// in the web UI.
func (g *GitLab) Approve(iid int, username string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mr(iid) == nil {
		g.t.Errorf("forgetest: GitLab.Approve(%d): no merge request !%d", iid, iid)
		return
	}
	if g.rv.approvals == nil {
		g.rv.approvals = map[int][]string{}
	}
	g.rv.approvals[iid] = append(g.rv.approvals[iid], username)
	g.autoMerge(g.mr(iid))
}

// SetMergeCommit sets the merge commit merged MR iid reports
// (merge_commit_sha), for a test that made that merge in a real catalog
// repo; without it the fake reports a made-up one.
func (g *GitLab) SetMergeCommit(iid int, sha string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.mr(iid); m != nil {
		m.mergeSHA = sha
	} else {
		g.t.Errorf("forgetest: GitLab.SetMergeCommit(%d): no merge request !%d", iid, iid)
	}
}

// PipelineSucceeded is MR iid's pipeline succeeding. GitLab then merges an
// MR set to auto-merge (merge_when_pipeline_succeeds or auto_merge) once
// every approval rule of its target branch has its approvals (until then
// its detailed_merge_status is "not_approved", and the approval that
// completes them merges it: Approve). It reports whether the MR is merged.
func (g *GitLab) PipelineSucceeded(iid int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.mr(iid)
	if m == nil {
		g.t.Errorf("forgetest: GitLab.PipelineSucceeded(%d): no merge request !%d", iid, iid)
		return false
	}
	m.pipelineOK = true
	g.autoMerge(m)
	return m.State == "merged"
}

// autoMerge merges m when it is set to auto-merge, its pipeline succeeded
// and it is approved (approved). The caller holds g.mu.
func (g *GitLab) autoMerge(m *glMR) {
	if m == nil || m.State != "open" || m.autoMerge == "" || !m.pipelineOK || !g.approved(m) {
		return
	}
	now := time.Now().UTC()
	m.State, m.mergedAt = "merged", &now
}

// approved reports whether every approval rule that applies to m's target
// branch (as Protection reads them: naming it, applying to all protected
// branches, or naming none) has its approvals_required from its users.
// The fake knows no group's members: an approval by a user the rule does
// not name counts only for a rule that names groups. The caller holds
// g.mu.
func (g *GitLab) approved(m *glMR) bool {
	for _, r := range g.rv.rules {
		branches, _ := r["protected_branches"].([]map[string]any)
		applies := r["applies_to_all_protected_branches"] == true || len(branches) == 0 ||
			slices.ContainsFunc(branches, func(b map[string]any) bool { return b["name"] == m.Base })
		if !applies {
			continue
		}
		users, _ := r["users"].([]map[string]any)
		groups, _ := r["groups"].([]map[string]any)
		n := 0
		for _, a := range g.rv.approvals[m.Number] {
			if len(groups) > 0 || slices.ContainsFunc(users, func(u map[string]any) bool { return u["username"] == a }) {
				n++
			}
		}
		if n < r["approvals_required"].(int) {
			return false
		}
	}
	return true
}

// serveReviews answers the approval endpoints (rest: the path after
// /projects/:id/); false when r is none of them. The caller holds g.mu.
func (g *GitLab) serveReviews(w http.ResponseWriter, r *http.Request, rest []string, iid int) bool {
	if r.Method != http.MethodGet {
		return false
	}
	switch {
	case len(rest) == 1 && rest[0] == "approval_rules":
		out := g.rv.rules
		if out == nil {
			out = []map[string]any{}
		}
		writeJSON(w, http.StatusOK, out)
	case len(rest) == 3 && iid > 0 && rest[2] == "approvals":
		m := g.mr(iid)
		if m == nil {
			glError(w, http.StatusNotFound, "404 Not found")
			return true
		}
		by := []map[string]any{}
		for _, u := range g.rv.approvals[iid] {
			by = append(by, map[string]any{"user": map[string]any{"username": u, "name": u, "state": "active"}})
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": 1000 + iid, "iid": iid, "project_id": g.id, "state": glState(m.State),
			"approved": len(by) > 0, "approved_by": by,
		})
	default:
		return false
	}
	return true
}
