package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"code.gitea.io/sdk/gitea"
)

// GiteaMaxBody is the limit this package keeps a Gitea or Forgejo PR body
// under, in bytes. Gitea's API documents no limit (the issue content column
// is a LONGTEXT/TEXT), so the number is a choice: GitHub's 65,536, so that
// one body fits every forge the same way, and because a self-hosted Gitea
// usually sits behind a reverse proxy whose request size limit (nginx's
// client_max_body_size defaults to 1 MiB) a much longer body, JSON-escaped,
// could exceed.
const GiteaMaxBody = 65536

// What Gitea asks of a token that opens pull requests: the
// write:repository scope (Gitea docs "Access token scope") and write access
// to the repository (collaborator with write, or a team with it).
const (
	giteaNeed     = "the write:repository scope and write access to the repository"
	giteaNeedRead = "the read:repository scope and read access to the repository"
	// Branch protections are read by the repository's admins only.
	giteaNeedAdmin = "the read:repository scope and admin access to the repository (branch protections are shown to admins)"
)

// newLabelColor is the color of labels this package creates on Gitea,
// which needs one (GitHub and GitLab pick their own).
const newLabelColor = "#c5def5"

// giteaForge is a Forge on Gitea or Forgejo, through the Gitea SDK. The
// SDK takes a context per client, not per call, so calls are serialized
// (a run makes a handful).
type giteaForge struct {
	base
	owner, name string
	mu          sync.Mutex
	c           *gitea.Client
}

// newGitea connects to the API at api, which must end in /api/v1 (the SDK
// adds that path itself to the server root). The server's version is not
// asked (no request in New): the calls used exist since Gitea 1.17.
func newGitea(b base, api *url.URL, hc *http.Client) (Forge, error) {
	p := strings.TrimSuffix(api.Path, "/")
	if !strings.HasSuffix(p, "/api/v1") {
		return nil, fmt.Errorf("--forge-api-url %q: a Gitea or Forgejo API URL ends in /api/v1 (https://HOST/api/v1)", api.String())
	}
	root := *api
	root.Path = strings.TrimSuffix(p, "/api/v1")
	c, err := gitea.NewClient(root.String(), gitea.SetToken(b.token), gitea.SetHTTPClient(hc), gitea.SetGiteaVersion(""))
	if err != nil {
		return nil, fmt.Errorf("--forge-api-url %q: %s", api.String(), b.redact(err.Error()))
	}
	g := &giteaForge{base: b, c: c}
	g.owner, g.name = splitRepo(b.repo)
	return g, nil
}

func (g *giteaForge) MaxBody() int { return GiteaMaxBody }

// client sets ctx on the client and returns it with the unlock to defer.
func (g *giteaForge) client(ctx context.Context) (*gitea.Client, func()) {
	g.mu.Lock()
	g.c.SetContext(ctx)
	return g.c, g.mu.Unlock
}

// err turns an SDK error (the forge's message) with its response into a
// *PermissionError (401, 403, 404) or a wrapped error.
func (g *giteaForge) err(op, need string, resp *gitea.Response, err error) error {
	if resp != nil && resp.Response != nil {
		switch st := resp.StatusCode; st {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			return g.permission(op, need, st, msg)
		}
	}
	if err == nil && resp != nil {
		err = fmt.Errorf("HTTP %d", resp.StatusCode)
	} else if err == nil {
		err = fmt.Errorf("no answer")
	}
	return g.fail(op, err)
}

func fromGitea(p *gitea.PullRequest) *PullRequest {
	pr := &PullRequest{
		Number: int(p.Index),
		URL:    p.HTMLURL,
		Title:  p.Title,
		Body:   p.Body,
		State:  string(p.State),
	}
	if p.Head != nil {
		pr.Head, pr.HeadSHA = p.Head.Ref, p.Head.Sha
	}
	if p.Base != nil {
		pr.Base = p.Base.Ref
	}
	if p.HasMerged {
		pr.State = "merged"
	}
	for _, l := range p.Labels {
		pr.Labels = append(pr.Labels, l.Name)
	}
	return pr
}

// Check reads the repository (Gitea API "repoGet"): permissions.push must
// be true for the token's user.
func (g *giteaForge) Check(ctx context.Context) error {
	c, unlock := g.client(ctx)
	defer unlock()
	r, resp, err := c.GetRepo(g.owner, g.name)
	if err != nil {
		return g.err("read repository", giteaNeedRead, resp, err)
	}
	if r.Permissions != nil && !r.Permissions.Push {
		return g.permission("check token", giteaNeed, 0, "the repository reports push: false for this token's user")
	}
	return nil
}

// Find pages through the open pulls (Gitea API "repoListPullRequests") for
// the one from head of this repository into base.
func (g *giteaForge) Find(ctx context.Context, head, base string) (*PullRequest, error) {
	c, unlock := g.client(ctx)
	defer unlock()
	return g.find(c, head, base)
}

func (g *giteaForge) find(c *gitea.Client, head, base string) (*PullRequest, error) {
	for page := 1; page > 0; {
		ps, resp, err := c.ListRepoPullRequests(g.owner, g.name, gitea.ListPullRequestsOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: 50}, State: gitea.StateOpen,
		})
		if err != nil {
			return nil, g.err("list pull requests", giteaNeedRead, resp, err)
		}
		for _, p := range ps {
			if p.Head != nil && p.Base != nil && p.Head.Ref == head && p.Base.Ref == base &&
				p.Head.RepoID == p.Base.RepoID && p.State == gitea.StateOpen {
				return fromGitea(p), nil
			}
		}
		page = resp.NextPage
		if len(ps) == 0 {
			page = 0
		}
	}
	return nil, nil
}

// labelIDs resolves label names to IDs (Gitea takes IDs), creating the
// missing ones (Gitea API "issueListLabels", "issueCreateLabel").
func (g *giteaForge) labelIDs(c *gitea.Client, names []string) ([]int64, error) {
	if len(names) == 0 {
		return nil, nil
	}
	have := map[string]int64{}
	for page := 1; page > 0; {
		ls, resp, err := c.ListRepoLabels(g.owner, g.name, gitea.ListLabelsOptions{ListOptions: gitea.ListOptions{Page: page, PageSize: 50}})
		if err != nil {
			return nil, g.err("list labels", giteaNeedRead, resp, err)
		}
		for _, l := range ls {
			have[l.Name] = l.ID
		}
		page = resp.NextPage
		if len(ls) == 0 {
			page = 0
		}
	}
	var ids []int64
	for _, n := range names {
		id, ok := have[n]
		if !ok {
			l, resp, err := c.CreateLabel(g.owner, g.name, gitea.CreateLabelOption{Name: n, Color: newLabelColor})
			if err != nil {
				return nil, g.err(fmt.Sprintf("create label %q", n), giteaNeed+" (labels are created by the repository's writers)", resp, err)
			}
			id, have[n] = l.ID, l.ID
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (g *giteaForge) checkBody(body string) error {
	if n := len(body); n > GiteaMaxBody {
		return fmt.Errorf("%s %s: pull request body is %d bytes, over the limit of %d kept on Gitea: shorten it (the full plan belongs in the job's artifact)", g.kind, g.repo, n, GiteaMaxBody)
	}
	return nil
}

// Create opens the pull (Gitea API "repoCreatePullRequest"); a 409 (a pull
// request for these branches exists) finds and updates it.
func (g *giteaForge) Create(ctx context.Context, head, base string, ch Change) (*PullRequest, error) {
	if err := g.checkBody(ch.Body); err != nil {
		return nil, err
	}
	c, unlock := g.client(ctx)
	defer unlock()
	ids, err := g.labelIDs(c, ch.Labels)
	if err != nil {
		return nil, err
	}
	p, resp, err := c.CreatePullRequest(g.owner, g.name, gitea.CreatePullRequestOption{Head: head, Base: base, Title: ch.Title, Body: ch.Body, Labels: ids})
	if err != nil {
		if resp == nil || (resp.StatusCode != http.StatusConflict && !(resp.StatusCode == http.StatusUnprocessableEntity && strings.Contains(err.Error(), "already exist"))) {
			return nil, g.err("create pull request", giteaNeed, resp, err)
		}
		old, ferr := g.find(c, head, base)
		if ferr != nil {
			return nil, ferr
		}
		if old == nil {
			return nil, g.fail("create pull request", fmt.Errorf("gitea says a pull request from %s into %s exists but lists none open: %w", head, base, err))
		}
		return g.update(c, old.Number, ch, ids)
	}
	return fromGitea(p), nil
}

// Update edits title and body (Gitea API "repoEditPullRequest") and adds
// labels (Gitea API "issueAddLabel": a pull request is an issue).
func (g *giteaForge) Update(ctx context.Context, number int, ch Change) (*PullRequest, error) {
	if err := g.checkBody(ch.Body); err != nil {
		return nil, err
	}
	c, unlock := g.client(ctx)
	defer unlock()
	ids, err := g.labelIDs(c, ch.Labels)
	if err != nil {
		return nil, err
	}
	return g.update(c, number, ch, ids)
}

func (g *giteaForge) update(c *gitea.Client, number int, ch Change, ids []int64) (*PullRequest, error) {
	opt := gitea.EditPullRequestOption{Title: ch.Title}
	if ch.Body != "" {
		opt.Body = &ch.Body
	}
	p, resp, err := c.EditPullRequest(g.owner, g.name, int64(number), opt)
	if err != nil {
		return nil, g.err(fmt.Sprintf("update pull request #%d", number), giteaNeed, resp, err)
	}
	pr := fromGitea(p)
	if len(ids) > 0 {
		ls, resp, err := c.AddIssueLabels(g.owner, g.name, int64(number), gitea.IssueLabelsOption{Labels: ids})
		if err != nil {
			return nil, g.err(fmt.Sprintf("add labels to pull request #%d", number), giteaNeed, resp, err)
		}
		pr.Labels = pr.Labels[:0]
		for _, l := range ls {
			pr.Labels = append(pr.Labels, l.Name)
		}
	}
	return pr, nil
}

// Comment adds an issue comment (Gitea API "issueCreateComment").
func (g *giteaForge) Comment(ctx context.Context, number int, body string) error {
	c, unlock := g.client(ctx)
	defer unlock()
	return g.comment(c, number, body)
}

func (g *giteaForge) comment(c *gitea.Client, number int, body string) error {
	_, resp, err := c.CreateIssueComment(g.owner, g.name, int64(number), gitea.CreateIssueCommentOption{Body: body})
	if err != nil {
		return g.err(fmt.Sprintf("comment on pull request #%d", number), giteaNeed, resp, err)
	}
	return nil
}

// Close comments, then sets state "closed" (Gitea API
// "repoEditPullRequest").
func (g *giteaForge) Close(ctx context.Context, number int, comment string) error {
	c, unlock := g.client(ctx)
	defer unlock()
	if comment != "" {
		if err := g.comment(c, number, comment); err != nil {
			return err
		}
	}
	closed := gitea.StateClosed
	_, resp, err := c.EditPullRequest(g.owner, g.name, int64(number), gitea.EditPullRequestOption{State: &closed})
	if err != nil {
		return g.err(fmt.Sprintf("close pull request #%d", number), giteaNeed, resp, err)
	}
	return nil
}

// AutoMerge merges with merge_when_checks_succeed (Gitea API
// "repoMergePullRequest"): Gitea answers 201 and schedules the merge, which
// its queue does once the required status checks pass (a moment later when
// there are none; seen on Gitea 1.27.3). A merge style
// the repository's settings turn off is ErrAutoMergeUnsupported (read from
// the repository first, since the SDK drops the message of a refused
// merge).
func (g *giteaForge) AutoMerge(ctx context.Context, pr *PullRequest, method string) error {
	if err := checkMethod(method); err != nil {
		return err
	}
	op := fmt.Sprintf("auto-merge pull request #%d", pr.Number)
	c, unlock := g.client(ctx)
	defer unlock()
	r, resp, err := c.GetRepo(g.owner, g.name)
	if err != nil {
		return g.err(op, giteaNeedRead, resp, err)
	}
	allowed := map[string]bool{"merge": r.AllowMerge, "squash": r.AllowSquash, "rebase": r.AllowRebase}
	if !allowed[method] {
		return fmt.Errorf("%s %s: %s: %w (merge style %q is turned off in the repository's settings)", g.kind, g.repo, op, ErrAutoMergeUnsupported, method)
	}
	opt := gitea.MergePullRequestOption{Style: gitea.MergeStyle(method), HeadCommitId: pr.HeadSHA, MergeWhenChecksSucceed: true}
	ok, resp, err := c.MergePullRequest(g.owner, g.name, int64(pr.Number), opt)
	// Gitea answers 405 ("try again later", a message the SDK drops) while
	// its queue still checks the mergeability of a pull request whose
	// branch was just pushed, and 409 until the same queue moved the pull
	// request's head to the pushed commit, or when a merge is scheduled
	// already (a run that updated the pull request): with the head at
	// pr.HeadSHA that is done; otherwise asked again a few times while the
	// pull request is open and unmerged, as GitLab's AutoMerge does.
	for attempt := 1; !ok && resp != nil && (resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusConflict); attempt++ {
		p, _, gerr := c.GetPullRequest(g.owner, g.name, int64(pr.Number))
		if gerr != nil || p.State != gitea.StateOpen || p.HasMerged {
			break
		}
		if resp.StatusCode == http.StatusConflict && p.Head != nil && p.Head.Sha == pr.HeadSHA {
			return nil // scheduled already, for this head
		}
		if attempt >= giteaMergeAttempts {
			break
		}
		t := time.NewTimer(time.Duration(attempt) * giteaRetryDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return g.fail(op, ctx.Err())
		case <-t.C:
		}
		ok, resp, err = c.MergePullRequest(g.owner, g.name, int64(pr.Number), opt)
	}
	if err != nil || !ok {
		if err == nil && resp != nil {
			switch resp.StatusCode {
			case http.StatusMethodNotAllowed:
				err = fmt.Errorf("HTTP 405: the pull request cannot be merged (a conflict, or it is closed)")
			case http.StatusConflict:
				err = fmt.Errorf("HTTP 409: the head branch moved since %s", pr.HeadSHA)
			}
		}
		return g.err(op, giteaNeed, resp, err)
	}
	return nil
}

// How often and how patiently AutoMerge asks again while Gitea checks a
// pull request's mergeability (a variable for tests).
const giteaMergeAttempts = 6

var giteaRetryDelay = time.Second

// Protection lists the branch protections (Gitea API
// "repoListBranchProtection") and takes the one whose rule (a branch name
// or a glob) matches branch, the exact name first.
func (g *giteaForge) Protection(ctx context.Context, branch string) (*Protection, error) {
	c, unlock := g.client(ctx)
	defer unlock()
	ps, resp, err := c.ListBranchProtections(g.owner, g.name, gitea.ListBranchProtectionsOptions{})
	if err != nil {
		return nil, g.err("list branch protections", giteaNeedAdmin, resp, err)
	}
	var hit *gitea.BranchProtection
	for _, p := range ps {
		rule := p.RuleName
		if rule == "" {
			rule = p.BranchName
		}
		if rule == branch {
			hit = p
			break
		}
		if ok, _ := path.Match(rule, branch); ok && hit == nil {
			hit = p
		}
	}
	if hit == nil {
		return &Protection{}, nil
	}
	pr := &Protection{Protected: true, Rule: hit.RuleName, RequiredApprovals: int(hit.RequiredApprovals)}
	if pr.Rule == "" {
		pr.Rule = hit.BranchName
	}
	if hit.EnableApprovalsWhitelist {
		pr.Users, pr.Teams = hit.ApprovalsWhitelistUsernames, hit.ApprovalsWhitelistTeams
	}
	return pr, nil
}

// Approvals lists the reviews (Gitea API "repoListPullReviews") and keeps
// the APPROVED ones not dismissed.
func (g *giteaForge) Approvals(ctx context.Context, number int) ([]Approval, error) {
	c, unlock := g.client(ctx)
	defer unlock()
	var out []Approval
	for page := 1; page > 0; {
		rs, resp, err := c.ListPullReviews(g.owner, g.name, int64(number), gitea.ListPullReviewsOptions{ListOptions: gitea.ListOptions{Page: page, PageSize: 50}})
		if err != nil {
			return nil, g.err(fmt.Sprintf("list reviews of pull request #%d", number), giteaNeedRead, resp, err)
		}
		for _, r := range rs {
			if r.State == gitea.ReviewStateApproved && !r.Dismissed && r.Reviewer != nil {
				out = append(out, Approval{User: r.Reviewer.UserName, Commit: r.CommitID, At: r.Submitted})
			}
		}
		page = resp.NextPage
		if len(rs) == 0 {
			page = 0
		}
	}
	return out, nil
}

// LastMerged pages through the closed pulls, most recently updated first
// (Gitea API "repoListPullRequests", state closed, sort recentupdate), for
// the first merged one from head into base.
func (g *giteaForge) LastMerged(ctx context.Context, head, base string) (*Merged, error) {
	c, unlock := g.client(ctx)
	defer unlock()
	for page := 1; page > 0; {
		ps, resp, err := c.ListRepoPullRequests(g.owner, g.name, gitea.ListPullRequestsOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: 50}, State: gitea.StateClosed, Sort: "recentupdate",
		})
		if err != nil {
			return nil, g.err("list pull requests", giteaNeedRead, resp, err)
		}
		for _, p := range ps {
			if p.HasMerged && p.Head != nil && p.Base != nil && p.Head.Ref == head && p.Base.Ref == base {
				m := &Merged{Number: int(p.Index), URL: p.HTMLURL, Body: p.Body}
				if p.MergedCommitID != nil {
					m.Commit = *p.MergedCommitID
				}
				if p.Merged != nil {
					m.MergedAt = *p.Merged
				}
				return m, nil
			}
		}
		page = resp.NextPage
		if len(ps) == 0 {
			page = 0
		}
	}
	return nil, nil
}
