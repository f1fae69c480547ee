package forge

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/google/go-github/v84/github"
)

// gitHubNeedAdmin is what reading a branch protection needs (GitHub REST
// "branch protection", get branch protection: "Administration" repository
// permissions (read)).
const gitHubNeedAdmin = "Administration: read on the repository (to read the branch protection)"

// codeOwnersPaths are where GitHub looks for CODEOWNERS, in its order
// (GitHub docs "About code owners", CODEOWNERS file location).
var codeOwnersPaths = []string{".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"}

// Protection reads the branch protection (GitHub REST "branch
// protection", get branch protection; 404 "Branch not protected" is no
// protection) and, when it requires code owner reviews, the code owners of
// branch's CODEOWNERS file (GitHub REST "repos/contents", get repository
// content): their approval is the one that counts.
func (g *gitHub) Protection(ctx context.Context, branch string) (*Protection, error) {
	p, _, err := g.c.Repositories.GetBranchProtection(ctx, g.owner, g.name, branch)
	if errors.Is(err, github.ErrBranchNotProtected) {
		return &Protection{}, nil
	}
	if err != nil {
		return nil, g.err("read the protection of branch "+branch, gitHubNeedAdmin, err)
	}
	out := &Protection{Protected: true, Rule: branch}
	r := p.RequiredPullRequestReviews
	if r == nil {
		return out, nil
	}
	out.RequiredApprovals = r.RequiredApprovingReviewCount
	if !r.RequireCodeOwnerReviews {
		return out, nil
	}
	for _, path := range codeOwnersPaths {
		fc, _, resp, err := g.c.Repositories.GetContents(ctx, g.owner, g.name, path, &github.RepositoryContentGetOptions{Ref: branch})
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			continue
		}
		if err != nil {
			return nil, g.err("read "+path, gitHubNeedRead, err)
		}
		text, err := fc.GetContent()
		if err != nil {
			return nil, g.fail("read "+path, err)
		}
		out.Users, out.Teams = codeOwners(text)
		break
	}
	return out, nil
}

// codeOwners returns the users and teams ("org/team") a CODEOWNERS file
// names as owners, each once.
func codeOwners(text string) (users, teams []string) {
	seen := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		for _, o := range f[min(1, len(f)):] {
			o, ok := strings.CutPrefix(o, "@")
			if !ok || seen[o] {
				continue
			}
			seen[o] = true
			if strings.Contains(o, "/") {
				teams = append(teams, o)
			} else {
				users = append(users, o)
			}
		}
	}
	return users, teams
}

// Approvals lists the reviews (GitHub REST "pulls/reviews", list reviews
// for a pull request) and keeps the APPROVED ones (a dismissed review has
// state DISMISSED).
func (g *gitHub) Approvals(ctx context.Context, number int) ([]Approval, error) {
	var out []Approval
	opts := &github.ListOptions{PerPage: 100}
	for {
		rs, resp, err := g.c.PullRequests.ListReviews(ctx, g.owner, g.name, number, opts)
		if err != nil {
			return nil, g.err("list the reviews of pull request", gitHubNeedRead, err)
		}
		for _, r := range rs {
			if r.GetState() == "APPROVED" {
				out = append(out, Approval{User: r.GetUser().GetLogin(), Commit: r.GetCommitID(), At: r.GetSubmittedAt().Time})
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// LastMerged lists the closed pulls from head into base, most recently
// updated first (GitHub REST "pulls", list pull requests), and returns the
// first merged one.
func (g *gitHub) LastMerged(ctx context.Context, head, base string) (*Merged, error) {
	opts := &github.PullRequestListOptions{State: "closed", Head: g.owner + ":" + head, Base: base, Sort: "updated", Direction: "desc", ListOptions: github.ListOptions{PerPage: 100}}
	ps, _, err := g.c.PullRequests.List(ctx, g.owner, g.name, opts)
	if err != nil {
		return nil, g.err("list pull requests", gitHubNeedRead, err)
	}
	for _, p := range ps {
		if p.MergedAt != nil && p.GetHead().GetRef() == head && p.GetBase().GetRef() == base {
			return &Merged{Number: p.GetNumber(), URL: p.GetHTMLURL(), Body: p.GetBody(), Commit: p.GetMergeCommitSHA(), MergedAt: p.GetMergedAt().Time}, nil
		}
	}
	return nil, nil
}
