package forge

import (
	"context"
	"slices"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// gitLabNeedRules is what reading a project's approval rules needs
// (GitLab REST "merge_request_approvals", get project-level rules: any
// member of the project; approval rules are a GitLab Premium feature).
const gitLabNeedRules = "at least the Reporter role on the project and the read_api scope (approval rules need GitLab Premium or Ultimate)"

// Protection reads the project's approval rules (GitLab REST
// "merge_request_approvals", get project-level rules) that apply to branch:
// those naming it among their protected branches, those applying to all
// protected branches, and those naming no branch (all branches). The
// approvals required are the most any of them requires; the users
// (usernames) and teams (group full paths) are those of the rules that
// require one at least. GitLab has no rule without a protected branch
// behind it, so Protected is true when a rule applies.
func (g *gitLab) Protection(ctx context.Context, branch string) (*Protection, error) {
	rules, _, err := g.c.Projects.GetProjectApprovalRules(g.repo, &gitlab.GetProjectApprovalRulesListsOptions{ListOptions: gitlab.ListOptions{PerPage: 100}}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, g.err("list approval rules", gitLabNeedRules, err)
	}
	out := &Protection{}
	for _, r := range rules {
		applies := r.AppliesToAllProtectedBranches || len(r.ProtectedBranches) == 0 ||
			slices.ContainsFunc(r.ProtectedBranches, func(b *gitlab.ProtectedBranch) bool { return b.Name == branch })
		if !applies || r.ApprovalsRequired < 1 {
			continue
		}
		if !out.Protected {
			out.Protected, out.Rule = true, r.Name
		}
		out.RequiredApprovals = max(out.RequiredApprovals, int(r.ApprovalsRequired))
		for _, u := range r.Users {
			out.Users = append(out.Users, u.Username)
		}
		for _, gr := range r.Groups {
			out.Teams = append(out.Teams, gr.FullPath)
		}
	}
	return out, nil
}

// Approvals reads who approved MR number (GitLab REST
// "merge_request_approvals", get configuration for a single merge
// request: approved_by). GitLab gives no commit or time per approval.
func (g *gitLab) Approvals(ctx context.Context, number int) ([]Approval, error) {
	a, _, err := g.c.MergeRequestApprovals.GetConfiguration(g.repo, int64(number), gitlab.WithContext(ctx))
	if err != nil {
		return nil, g.err("read the approvals of merge request", gitLabNeedRead, err)
	}
	var out []Approval
	for _, u := range a.ApprovedBy {
		if u != nil && u.User != nil {
			out = append(out, Approval{User: u.User.Username})
		}
	}
	return out, nil
}

// LastMerged lists the merged MRs from head into base, most recently
// updated first (GitLab REST "merge_requests", list project merge
// requests, state merged), and returns the first.
func (g *gitLab) LastMerged(ctx context.Context, head, base string) (*Merged, error) {
	ms, _, err := g.c.MergeRequests.ListProjectMergeRequests(g.repo, &gitlab.ListProjectMergeRequestsOptions{
		State: gitlab.Ptr("merged"), SourceBranch: gitlab.Ptr(head), TargetBranch: gitlab.Ptr(base),
		OrderBy: gitlab.Ptr("updated_at"), Sort: gitlab.Ptr("desc"), ListOptions: gitlab.ListOptions{PerPage: 100},
	}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, g.err("list merge requests", gitLabNeedRead, err)
	}
	for _, m := range ms {
		if m.SourceBranch == head && m.TargetBranch == base && m.State == "merged" {
			out := &Merged{Number: int(m.IID), URL: m.WebURL, Body: m.Description, Commit: m.MergeCommitSHA}
			if m.MergedAt != nil {
				out.MergedAt = *m.MergedAt
			}
			return out, nil
		}
	}
	return nil, nil
}
