package forge

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// Approvers names who must approve a cluster's pull request
// (publish.yaml clusters.<name>.pullRequest.approvers): forge users by
// login and teams ("org/team" on Gitea and GitHub, the group path on
// GitLab). Artifacts, when set, is a path.Match pattern of the artifact
// names the entry applies to; "" applies it to every pull request.
type Approvers struct {
	Users     []string
	Teams     []string
	Artifacts string
}

// Applies reports whether a applies to a pull request that changes the
// artifacts names (an invalid pattern matches nothing; the config check
// refuses it first).
func (a Approvers) Applies(names []string) bool {
	if a.Artifacts == "" {
		return true
	}
	for _, n := range names {
		if ok, _ := path.Match(a.Artifacts, n); ok {
			return true
		}
	}
	return false
}

// Protection is what the forge says a branch's protection requires of a
// pull request's reviews before it may be merged.
type Protection struct {
	// Protected is false when no protection rule covers the branch.
	Protected bool
	// Rule is the name of the rule that covers it (a branch name or a
	// glob on Gitea, a pattern on GitHub, "" when none).
	Rule string
	// RequiredApprovals is how many approvals a merge needs (0: none).
	RequiredApprovals int
	// Users and Teams are those whose approval counts (Gitea's approvals
	// whitelist, GitHub's code owners, GitLab's approval rule's eligible
	// approvers); both empty: any reviewer with write access counts.
	Users, Teams []string
}

// Missing returns, for each approver of want that p does not require, a
// sentence of what is missing; none when p requires them all. A required
// approval counts only when only the named users and teams may give it:
// a rule that any writer can satisfy is not their approval.
func (p *Protection) Missing(want []Approvers) []string {
	var out []string
	if p == nil || !p.Protected {
		return []string{"the branch has no protection rule"}
	}
	if p.RequiredApprovals < 1 {
		out = append(out, fmt.Sprintf("rule %q requires %d approvals", p.Rule, p.RequiredApprovals))
	}
	for _, a := range want {
		for _, u := range a.Users {
			if !slices.ContainsFunc(p.Users, func(s string) bool { return strings.EqualFold(s, u) }) {
				out = append(out, fmt.Sprintf("user %s is not among the approvers rule %q counts", u, p.Rule))
			}
		}
		for _, t := range a.Teams {
			_, name := splitTeam(t)
			if !slices.ContainsFunc(p.Teams, func(s string) bool { return strings.EqualFold(s, t) || strings.EqualFold(s, name) }) {
				out = append(out, fmt.Sprintf("team %s is not among the approvers rule %q counts", t, p.Rule))
			}
		}
	}
	return out
}

// splitTeam splits "org/team" (a bare "team" has no org).
func splitTeam(t string) (org, name string) {
	if i := strings.LastIndex(t, "/"); i >= 0 {
		return t[:i], t[i+1:]
	}
	return "", t
}

// HowTo says how to make branch of repo on a forge of kind require the
// approvals of want: the setting to change, in the forge's own words.
func HowTo(kind, repo, branch string, want []Approvers) string {
	var users, teams []string
	for _, a := range want {
		users = append(users, a.Users...)
		teams = append(teams, a.Teams...)
	}
	who := strings.Join(append(append([]string{}, users...), teams...), ", ")
	switch kind {
	case KindGitHub:
		return fmt.Sprintf("in %s Settings → Branches (or Rules → Rulesets), protect %s with \"Require a pull request before merging\", \"Require review from Code Owners\" and at least 1 required approval, and name %s as the owners of the catalog in .github/CODEOWNERS (API: PUT /repos/%s/branches/%s/protection with required_pull_request_reviews.require_code_owner_reviews: true)", repo, branch, who, repo, branch)
	case KindGitLab:
		return fmt.Sprintf("in %s Settings → Merge requests → Merge request approvals, add an approval rule for %s with %s as eligible approvers and at least 1 approval required (API: POST /projects/:id/approval_rules with usernames, group_ids and protected_branch_ids)", repo, branch, who)
	default:
		return fmt.Sprintf("in %s Settings → Branches, add a protection rule for %s with \"Required approvals\" at least 1 and \"Restrict approvals to allowlisted users or teams\" naming %s (API: POST /repos/%s/branch_protections with required_approvals, enable_approvals_whitelist, approvals_whitelist_username, approvals_whitelist_teams)", repo, branch, who, repo)
	}
}

// Approval is one approving review of a pull request, as the forge's
// review API reports it.
type Approval struct {
	User   string    // the reviewer's login
	Commit string    // the head commit the review was given on ("" when unknown)
	At     time.Time // when it was submitted
}

// Merged is a pull request the forge merged: Number and URL, the merge
// commit on the base branch, and when.
type Merged struct {
	Number   int
	URL      string
	Body     string
	Commit   string
	MergedAt time.Time
}

// Reviews is what a Forge that reads branch protection and reviews does
// besides Forge (all three forges of this package do).
type Reviews interface {
	// Protection reads what the protection of branch requires of reviews
	// (a branch without protection is Protected false, no error).
	Protection(ctx context.Context, branch string) (*Protection, error)
	// Approvals lists the approving reviews of pull request number that
	// still count (not dismissed), in the order given.
	Approvals(ctx context.Context, number int) ([]Approval, error)
	// LastMerged returns the most recently merged pull request from head
	// into base, nil when there is none.
	LastMerged(ctx context.Context, head, base string) (*Merged, error)
}
