package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/google/go-github/v84/github"
)

// GitHubMaxBody is GitHub's limit on a pull request body, in characters:
// the REST API refuses a longer one with 422 "body is too long (maximum is
// 65536 characters)" (GitHub REST "pulls", create and update a pull request).
const GitHubMaxBody = 65536

// Permissions GitHub asks for, named as its fine-grained token settings name
// them (GitHub docs "Permissions required for fine-grained personal access
// tokens"): the pull request endpoints need "Pull requests: write"; pushing
// the rolling branch needs "Contents: write".
const (
	gitHubNeedPR   = "Pull requests: write (and Contents: write, to push the rolling branch)"
	gitHubNeedRead = "Metadata: read and Pull requests: read on the repository"
)

// gitHub is a Forge on github.com or GitHub Enterprise Server, through
// google/go-github.
type gitHub struct {
	base
	c           *github.Client
	owner, name string
	graphqlURL  string
}

// newGitHub connects to the REST API at api (https://api.github.com, or
// https://HOST/api/v3 on GitHub Enterprise Server, whose GraphQL endpoint
// is then https://HOST/api/graphql; GitHub docs "About the GraphQL API",
// "the endpoint").
func newGitHub(b base, api *url.URL, hc *http.Client) (Forge, error) {
	c := github.NewClient(hc).WithAuthToken(b.token)
	g := &gitHub{base: b, c: c}
	g.owner, g.name = splitRepo(b.repo)
	rest := *api
	rest.Path = strings.TrimSuffix(rest.Path, "/") + "/"
	gql := *api
	switch p := strings.TrimSuffix(api.Path, "/"); {
	case api.Host == "api.github.com":
		gql.Path = "/graphql"
	case strings.HasSuffix(p, "/api/v3"):
		gql.Path = strings.TrimSuffix(p, "/v3") + "/graphql"
	default:
		gql.Path = p + "/graphql"
	}
	c.BaseURL = &rest
	g.graphqlURL = gql.String()
	return g, nil
}

func (g *gitHub) MaxBody() int { return GitHubMaxBody }

// err turns a go-github error into a *PermissionError (401, 403, 404) or a
// wrapped error. need is the permission op needs, replaced by the
// X-Accepted-GitHub-Permissions header when GitHub sent one (GitHub docs
// "Troubleshooting the REST API", insufficient permission errors).
func (g *gitHub) err(op, need string, err error) error {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		switch st := er.Response.StatusCode; st {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
			if h := er.Response.Header.Get("X-Accepted-GitHub-Permissions"); h != "" {
				need = acceptedPermissions(h)
				if strings.Contains(need, "Pull requests") && !strings.Contains(need, "Contents") {
					need += " (and Contents: write, to push the rolling branch)"
				}
			}
			return g.permission(op, need, st, er.Message)
		}
	}
	return g.fail(op, err)
}

// acceptedPermissions renders GitHub's X-Accepted-GitHub-Permissions header
// ("pull_requests=write; contents=read,issues=write": sets separated by
// ";", any one set suffices) as "Pull requests: write or Contents: read
// and Issues: write".
func acceptedPermissions(h string) string {
	var sets []string
	for _, set := range strings.Split(h, ";") {
		var perms []string
		for _, p := range strings.Split(set, ",") {
			name, level, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok || name == "" {
				continue
			}
			name = strings.ReplaceAll(name, "_", " ")
			perms = append(perms, strings.ToUpper(name[:1])+name[1:]+": "+level)
		}
		if len(perms) > 0 {
			sets = append(sets, strings.Join(perms, " and "))
		}
	}
	if len(sets) == 0 {
		return gitHubNeedPR
	}
	return strings.Join(sets, " or ")
}

func fromGitHub(p *github.PullRequest) *PullRequest {
	pr := &PullRequest{
		Number:  p.GetNumber(),
		URL:     p.GetHTMLURL(),
		Title:   p.GetTitle(),
		Body:    p.GetBody(),
		Head:    p.GetHead().GetRef(),
		Base:    p.GetBase().GetRef(),
		HeadSHA: p.GetHead().GetSHA(),
		State:   p.GetState(),
		NodeID:  p.GetNodeID(),
	}
	if p.GetMerged() || p.MergedAt != nil {
		pr.State = "merged"
	}
	for _, l := range p.Labels {
		pr.Labels = append(pr.Labels, l.GetName())
	}
	return pr
}

// Check reads the repository (GitHub REST "repos", get a repository). The
// answer's permissions.push is false for a user whose token may only read;
// a classic token's X-OAuth-Scopes must hold repo or public_repo. GitHub App
// and fine-grained tokens report neither, so their first write tells.
func (g *gitHub) Check(ctx context.Context) error {
	r, resp, err := g.c.Repositories.Get(ctx, g.owner, g.name)
	if err != nil {
		return g.err("read repository", gitHubNeedRead, err)
	}
	if p := r.GetPermissions(); p != nil && p.Push != nil && !*p.Push {
		return g.permission("check token", gitHubNeedPR, 0, "the repository reports push: false for this token's user")
	}
	if scopes, ok := resp.Header["X-Oauth-Scopes"]; ok {
		has := false
		for _, s := range strings.Split(strings.Join(scopes, ","), ",") {
			s = strings.TrimSpace(s)
			has = has || s == "repo" || (s == "public_repo" && !r.GetPrivate())
		}
		if !has {
			return g.permission("check token", "the repo scope (classic token)", 0, "X-OAuth-Scopes: "+strings.Join(scopes, ","))
		}
	}
	return nil
}

// Find lists the open pulls with head "owner:head" and base (GitHub REST
// "pulls", list pull requests).
func (g *gitHub) Find(ctx context.Context, head, base string) (*PullRequest, error) {
	opts := &github.PullRequestListOptions{State: "open", Head: g.owner + ":" + head, Base: base, ListOptions: github.ListOptions{PerPage: 100}}
	ps, _, err := g.c.PullRequests.List(ctx, g.owner, g.name, opts)
	if err != nil {
		return nil, g.err("list pull requests", gitHubNeedRead, err)
	}
	for _, p := range ps {
		if p.GetHead().GetRef() == head && p.GetBase().GetRef() == base && p.GetState() == "open" {
			return fromGitHub(p), nil
		}
	}
	return nil, nil
}

func (g *gitHub) checkBody(body string) error {
	if n := utf8.RuneCountInString(body); n > GitHubMaxBody {
		return fmt.Errorf("%s %s: pull request body is %d characters, over GitHub's limit of %d: shorten it (the full plan belongs in the job's artifact)", g.kind, g.repo, n, GitHubMaxBody)
	}
	return nil
}

// Create opens the pull (GitHub REST "pulls", create a pull request); a 422
// "A pull request already exists for owner:branch." finds and updates it.
func (g *gitHub) Create(ctx context.Context, head, base string, c Change) (*PullRequest, error) {
	if err := g.checkBody(c.Body); err != nil {
		return nil, err
	}
	p, _, err := g.c.PullRequests.Create(ctx, g.owner, g.name, &github.NewPullRequest{
		Title: github.Ptr(c.Title), Head: github.Ptr(head), Base: github.Ptr(base), Body: github.Ptr(c.Body),
	})
	if err != nil {
		if !gitHubAlreadyExists(err) {
			return nil, g.err("create pull request", gitHubNeedPR, err)
		}
		old, ferr := g.Find(ctx, head, base)
		if ferr != nil {
			return nil, ferr
		}
		if old == nil {
			return nil, g.fail("create pull request", fmt.Errorf("GitHub says a pull request from %s into %s exists but lists none open: %w", head, base, err))
		}
		return g.Update(ctx, old.Number, c)
	}
	pr := fromGitHub(p)
	return pr, g.label(ctx, pr, c.Labels)
}

func gitHubAlreadyExists(err error) bool {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusUnprocessableEntity {
		return false
	}
	for _, e := range er.Errors {
		if strings.Contains(e.Message, "already exists") {
			return true
		}
	}
	return strings.Contains(er.Message, "already exists")
}

// label adds labels to pr (GitHub REST "issues/labels", add labels to an
// issue: a pull request is an issue; missing labels are created).
func (g *gitHub) label(ctx context.Context, pr *PullRequest, labels []string) error {
	if len(labels) == 0 {
		return nil
	}
	ls, _, err := g.c.Issues.AddLabelsToIssue(ctx, g.owner, g.name, pr.Number, labels)
	if err != nil {
		return g.err(fmt.Sprintf("add labels to pull request #%d", pr.Number), "Pull requests: write (or Issues: write)", err)
	}
	pr.Labels = pr.Labels[:0]
	for _, l := range ls {
		pr.Labels = append(pr.Labels, l.GetName())
	}
	return nil
}

// Update edits title and body (GitHub REST "pulls", update a pull request)
// and adds labels.
func (g *gitHub) Update(ctx context.Context, number int, c Change) (*PullRequest, error) {
	if err := g.checkBody(c.Body); err != nil {
		return nil, err
	}
	edit := &github.PullRequest{}
	if c.Title != "" {
		edit.Title = github.Ptr(c.Title)
	}
	if c.Body != "" {
		edit.Body = github.Ptr(c.Body)
	}
	var p *github.PullRequest
	var err error
	if edit.Title == nil && edit.Body == nil {
		p, _, err = g.c.PullRequests.Get(ctx, g.owner, g.name, number)
	} else {
		p, _, err = g.c.PullRequests.Edit(ctx, g.owner, g.name, number, edit)
	}
	if err != nil {
		return nil, g.err(fmt.Sprintf("update pull request #%d", number), gitHubNeedPR, err)
	}
	pr := fromGitHub(p)
	return pr, g.label(ctx, pr, c.Labels)
}

// Comment posts an issue comment (GitHub REST "issues/comments", create an
// issue comment).
func (g *gitHub) Comment(ctx context.Context, number int, body string) error {
	_, _, err := g.c.Issues.CreateComment(ctx, g.owner, g.name, number, &github.IssueComment{Body: github.Ptr(body)})
	if err != nil {
		return g.err(fmt.Sprintf("comment on pull request #%d", number), "Pull requests: write (or Issues: write)", err)
	}
	return nil
}

// Close comments, then sets state "closed" (GitHub REST "pulls", update a
// pull request).
func (g *gitHub) Close(ctx context.Context, number int, comment string) error {
	if comment != "" {
		if err := g.Comment(ctx, number, comment); err != nil {
			return err
		}
	}
	_, _, err := g.c.PullRequests.Edit(ctx, g.owner, g.name, number, &github.PullRequest{State: github.Ptr("closed")})
	if err != nil {
		return g.err(fmt.Sprintf("close pull request #%d", number), gitHubNeedPR, err)
	}
	return nil
}

// enableAutoMerge is the GraphQL mutation enablePullRequestAutoMerge
// (GitHub GraphQL reference, mutations): REST has no auto-merge endpoint.
// expectedHeadOid makes GitHub refuse when the branch moved meanwhile.
const enableAutoMerge = `mutation($id: ID!, $method: PullRequestMergeMethod!, $head: GitObjectID) {
  enablePullRequestAutoMerge(input: {pullRequestId: $id, mergeMethod: $method, expectedHeadOid: $head}) {
    pullRequest { number }
  }
}`

type graphqlRequest struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables"`
}

type graphqlResponse struct {
	Errors []struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"errors"`
}

// AutoMerge enables auto-merge through GraphQL. When GitHub answers that the
// pull request is already mergeable ("clean status": no required check is
// pending), it merges it at once (GitHub REST "pulls", merge a pull
// request), which is what auto-merge would do.
func (g *gitHub) AutoMerge(ctx context.Context, pr *PullRequest, method string) error {
	if err := checkMethod(method); err != nil {
		return err
	}
	op := fmt.Sprintf("enable auto-merge of pull request #%d", pr.Number)
	id, sha := pr.NodeID, pr.HeadSHA
	if id == "" {
		p, _, err := g.c.PullRequests.Get(ctx, g.owner, g.name, pr.Number)
		if err != nil {
			return g.err(op, gitHubNeedRead, err)
		}
		id = p.GetNodeID()
		if sha == "" {
			sha = p.GetHead().GetSHA()
		}
	}
	vars := map[string]any{"id": id, "method": strings.ToUpper(method), "head": nil}
	if sha != "" {
		vars["head"] = sha
	}
	req, err := g.c.NewRequest(http.MethodPost, g.graphqlURL, &graphqlRequest{Query: enableAutoMerge, Variables: vars})
	if err != nil {
		return g.fail(op, err)
	}
	var out graphqlResponse
	if _, err := g.c.Do(ctx, req, &out); err != nil {
		return g.err(op, gitHubNeedPR, err)
	}
	if len(out.Errors) == 0 {
		return nil
	}
	e := out.Errors[0]
	low := strings.ToLower(e.Message)
	switch {
	case e.Type == "FORBIDDEN":
		return g.permission(op, gitHubNeedPR, 0, e.Message)
	case strings.Contains(low, "auto merge is not allowed") || strings.Contains(low, "auto-merge is not allowed"):
		return fmt.Errorf("%s %s: %s: %w (GitHub: %s): turn on \"Allow auto-merge\" in the repository's settings, or leave auto-merge off", g.kind, g.repo, op, ErrAutoMergeUnsupported, e.Message)
	case strings.Contains(low, "clean status"):
		_, _, err := g.c.PullRequests.Merge(ctx, g.owner, g.name, pr.Number, "", &github.PullRequestOptions{MergeMethod: method, SHA: sha})
		if err != nil {
			return g.err(fmt.Sprintf("merge pull request #%d", pr.Number), "Contents: write and Pull requests: write", err)
		}
		return nil
	}
	return g.fail(op, fmt.Errorf("GitHub GraphQL: %s (%s)", e.Message, e.Type))
}
