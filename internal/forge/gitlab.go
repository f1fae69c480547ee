package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// GitLabMaxBody is GitLab's limit on a merge request description: 1 MiB
// (1,048,576 bytes; GitLab development docs "Issuable-like Rails models",
// important text fields: description 1 megabyte).
const GitLabMaxBody = 1 << 20

// What GitLab asks of a token that opens merge requests: at least the
// Developer role on the project (to push the rolling branch and create the
// MR) and, for a personal, project or group access token, the api scope
// (GitLab docs "Roles and permissions", "Personal access tokens" scopes).
const (
	gitLabNeed     = "the Developer role (or higher) on the project and the api scope"
	gitLabNeedRead = "at least the Reporter role on the project and the read_api scope"
)

// gitLab is a Forge on GitLab, through gitlab-org/api/client-go.
type gitLab struct {
	base
	c *gitlab.Client
}

// newGitLab connects to the v4 API at api (https://HOST/api/v4).
func newGitLab(b base, api *url.URL, hc *http.Client) (Forge, error) {
	c, err := gitlab.NewClient(b.token, gitlab.WithBaseURL(api.String()), gitlab.WithHTTPClient(hc))
	if err != nil {
		return nil, fmt.Errorf("--forge-api-url %q: %s", api.String(), b.redact(err.Error()))
	}
	return &gitLab{base: b, c: c}, nil
}

func (g *gitLab) MaxBody() int { return GitLabMaxBody }

// err turns a client error into a *PermissionError (401, 403, 404) or a
// wrapped error.
func (g *gitLab) err(op, need string, err error) error {
	if errors.Is(err, gitlab.ErrNotFound) { // the client's error for every 404
		return g.permission(op, need, http.StatusNotFound, "404 Not Found")
	}
	var er *gitlab.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		switch st := er.Response.StatusCode; st {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
			return g.permission(op, need, st, er.Message)
		}
	}
	return g.fail(op, err)
}

// gitLabState maps GitLab's "opened", "closed", "merged", "locked".
func gitLabState(s string) string {
	switch s {
	case "opened", "locked":
		return "open"
	}
	return s
}

func fromGitLab(m *gitlab.BasicMergeRequest) *PullRequest {
	return &PullRequest{
		Number:  int(m.IID),
		URL:     m.WebURL,
		Title:   m.Title,
		Body:    m.Description,
		Head:    m.SourceBranch,
		Base:    m.TargetBranch,
		HeadSHA: m.SHA,
		State:   gitLabState(m.State),
		Labels:  append([]string(nil), m.Labels...),
	}
}

// Check reads the project (GitLab REST "projects", get a single project):
// permissions.project_access and group_access hold the token user's access
// level, which must be Developer (30) or more.
func (g *gitLab) Check(ctx context.Context) error {
	p, _, err := g.c.Projects.GetProject(g.repo, nil, gitlab.WithContext(ctx))
	if err != nil {
		return g.err("read project", gitLabNeedRead, err)
	}
	level := gitlab.AccessLevelValue(0)
	if p.Permissions != nil {
		if a := p.Permissions.ProjectAccess; a != nil && a.AccessLevel > level {
			level = a.AccessLevel
		}
		if a := p.Permissions.GroupAccess; a != nil && a.AccessLevel > level {
			level = a.AccessLevel
		}
	}
	if level < gitlab.DeveloperPermissions {
		return g.permission("check token", gitLabNeed, 0, fmt.Sprintf("the token's user has access level %d on the project (Developer is 30)", level))
	}
	return nil
}

// Find lists the opened MRs with the source and target branches (GitLab
// REST "merge_requests", list project merge requests) and keeps the one
// whose source project is the project itself.
func (g *gitLab) Find(ctx context.Context, head, base string) (*PullRequest, error) {
	ms, _, err := g.c.MergeRequests.ListProjectMergeRequests(g.repo, &gitlab.ListProjectMergeRequestsOptions{
		State: gitlab.Ptr("opened"), SourceBranch: gitlab.Ptr(head), TargetBranch: gitlab.Ptr(base),
		ListOptions: gitlab.ListOptions{PerPage: 100},
	}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, g.err("list merge requests", gitLabNeedRead, err)
	}
	for _, m := range ms {
		if m.SourceBranch == head && m.TargetBranch == base && m.SourceProjectID == m.TargetProjectID && m.State == "opened" {
			return fromGitLab(m), nil
		}
	}
	return nil, nil
}

func (g *gitLab) checkBody(body string) error {
	if n := len(body); n > GitLabMaxBody {
		return fmt.Errorf("%s %s: merge request description is %d bytes, over GitLab's limit of %d: shorten it (the full plan belongs in the job's artifact)", g.kind, g.repo, n, GitLabMaxBody)
	}
	return nil
}

// Create opens the MR (GitLab REST "merge_requests", create MR; GitLab
// creates labels that do not exist); a 409 "Another open merge request
// already exists for this source branch" finds and updates it.
func (g *gitLab) Create(ctx context.Context, head, base string, c Change) (*PullRequest, error) {
	if err := g.checkBody(c.Body); err != nil {
		return nil, err
	}
	opt := &gitlab.CreateMergeRequestOptions{
		Title: gitlab.Ptr(c.Title), Description: gitlab.Ptr(c.Body),
		SourceBranch: gitlab.Ptr(head), TargetBranch: gitlab.Ptr(base),
	}
	if len(c.Labels) > 0 {
		opt.Labels = (*gitlab.LabelOptions)(&c.Labels)
	}
	m, _, err := g.c.MergeRequests.CreateMergeRequest(g.repo, opt, gitlab.WithContext(ctx))
	if err != nil {
		var er *gitlab.ErrorResponse
		if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusConflict {
			return nil, g.err("create merge request", gitLabNeed, err)
		}
		old, ferr := g.Find(ctx, head, base)
		if ferr != nil {
			return nil, ferr
		}
		if old == nil {
			return nil, g.fail("create merge request", fmt.Errorf("GitLab says a merge request from %s exists but lists none open into %s: %w", head, base, err))
		}
		return g.Update(ctx, old.Number, c)
	}
	return fromGitLab(&m.BasicMergeRequest), nil
}

// Update sets title and description and adds labels with add_labels
// (GitLab REST "merge_requests", update MR).
func (g *gitLab) Update(ctx context.Context, number int, c Change) (*PullRequest, error) {
	if err := g.checkBody(c.Body); err != nil {
		return nil, err
	}
	opt := &gitlab.UpdateMergeRequestOptions{}
	if c.Title != "" {
		opt.Title = gitlab.Ptr(c.Title)
	}
	if c.Body != "" {
		opt.Description = gitlab.Ptr(c.Body)
	}
	if len(c.Labels) > 0 {
		opt.AddLabels = (*gitlab.LabelOptions)(&c.Labels)
	}
	m, _, err := g.c.MergeRequests.UpdateMergeRequest(g.repo, int64(number), opt, gitlab.WithContext(ctx))
	if err != nil {
		return nil, g.err(fmt.Sprintf("update merge request !%d", number), gitLabNeed, err)
	}
	return fromGitLab(&m.BasicMergeRequest), nil
}

// Comment adds a note (GitLab REST "notes", create new merge request note).
func (g *gitLab) Comment(ctx context.Context, number int, body string) error {
	_, _, err := g.c.Notes.CreateMergeRequestNote(g.repo, int64(number), &gitlab.CreateMergeRequestNoteOptions{Body: gitlab.Ptr(body)}, gitlab.WithContext(ctx))
	if err != nil {
		return g.err(fmt.Sprintf("comment on merge request !%d", number), gitLabNeed, err)
	}
	return nil
}

// Close comments, then sends state_event "close" (GitLab REST
// "merge_requests", update MR).
func (g *gitLab) Close(ctx context.Context, number int, comment string) error {
	if comment != "" {
		if err := g.Comment(ctx, number, comment); err != nil {
			return err
		}
	}
	_, _, err := g.c.MergeRequests.UpdateMergeRequest(g.repo, int64(number), &gitlab.UpdateMergeRequestOptions{StateEvent: gitlab.Ptr("close")}, gitlab.WithContext(ctx))
	if err != nil {
		return g.err(fmt.Sprintf("close merge request !%d", number), gitLabNeed, err)
	}
	return nil
}

// AutoMerge accepts the MR with auto_merge (GitLab 17.11+; older servers
// read merge_when_pipeline_succeeds, sent too) so GitLab merges it when
// its pipeline and checks pass (GitLab REST "merge_requests", merge a merge
// request). "squash" sets squash; "merge" and "rebase" both leave the
// project's merge method (merge commit, semi-linear, fast-forward) to
// decide, since GitLab sets it per project, not per merge. sha is the head
// the caller saw: GitLab answers 409 when the branch moved.
func (g *gitLab) AutoMerge(ctx context.Context, pr *PullRequest, method string) error {
	if err := checkMethod(method); err != nil {
		return err
	}
	opt := &gitlab.AcceptMergeRequestOptions{AutoMerge: gitlab.Ptr(true), MergeWhenPipelineSucceeds: gitlab.Ptr(true)}
	if method == "squash" {
		opt.Squash = gitlab.Ptr(true)
	}
	if pr.HeadSHA != "" {
		opt.SHA = gitlab.Ptr(pr.HeadSHA)
	}
	op := fmt.Sprintf("auto-merge merge request !%d", pr.Number)
	for attempt := 1; ; attempt++ {
		_, _, err := g.c.MergeRequests.AcceptMergeRequest(g.repo, int64(pr.Number), opt, gitlab.WithContext(ctx))
		if err == nil {
			return nil
		}
		// 405 is GitLab's answer for an MR that is closed, merged, a draft or
		// blocked, and also for one whose mergeability GitLab is still
		// computing, as it does for a while after the MR is created or its
		// branch pushed: that one is asked again, a few times. Auto-merge
		// itself is in every GitLab edition, so ErrAutoMergeUnsupported is
		// never returned here.
		if attempt < gitLabMergeAttempts && g.stillChecking(ctx, pr.Number, err) {
			t := time.NewTimer(time.Duration(attempt) * gitLabRetryDelay)
			select {
			case <-ctx.Done():
				t.Stop()
				return g.fail(op, ctx.Err())
			case <-t.C:
			}
			continue
		}
		return g.err(op, "the Developer role (or the role allowed to merge into the target branch) and the api scope", err)
	}
}

// How often and how patiently AutoMerge asks again while GitLab computes
// an MR's mergeability (a variable for tests).
const gitLabMergeAttempts = 5

var gitLabRetryDelay = time.Second

// stillChecking tells whether err, an answer to accept MR iid, is a 405 or
// 422 while GitLab has not finished computing the MR's mergeability
// (detailed_merge_status unchecked, checking, preparing or
// approvals_syncing; GitLab REST "merge_requests", merge status).
func (g *gitLab) stillChecking(ctx context.Context, iid int, err error) bool {
	var er *gitlab.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil ||
		(er.Response.StatusCode != http.StatusMethodNotAllowed && er.Response.StatusCode != http.StatusUnprocessableEntity) {
		return false
	}
	m, _, gerr := g.c.MergeRequests.GetMergeRequest(g.repo, int64(iid), nil, gitlab.WithContext(ctx))
	if gerr != nil {
		return false
	}
	switch m.DetailedMergeStatus {
	case "unchecked", "checking", "preparing", "approvals_syncing":
		return true
	}
	return false
}
