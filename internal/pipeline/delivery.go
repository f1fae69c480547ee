package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/delivery"
	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/report"
)

// Deliveries: how a cluster's catalog change reaches the catalog branch
// (publish.yaml clusters.<name>.delivery, --delivery; docs/clusters.md).
const (
	// DeliveryPush commits the change to the catalog branch (the default).
	DeliveryPush = "push"
	// DeliveryPullRequest pushes the change to the cluster's rolling
	// branch and opens (or updates) one pull request against the catalog
	// branch; a reviewer merges it.
	DeliveryPullRequest = "pull-request"
)

// PullRequestOptions are the settings of a cluster whose delivery is
// DeliveryPullRequest (publish.yaml clusters.<name>.pullRequest).
type PullRequestOptions struct {
	// Branch is the rolling branch (default "publish/<cluster>"): every
	// run writes it again as one commit on the current catalog branch.
	Branch string
	// Labels are added to the pull request (existing ones are kept).
	Labels []string
	// AutoMerge, when set ("merge", "squash" or "rebase"), asks the forge
	// to merge the pull request once its checks and reviews pass; a forge
	// or repository that does not allow it gets a warning.
	AutoMerge string
}

// PullRequestResult is what a run did with the pull request of a cluster.
type PullRequestResult struct {
	// Number and URL are the pull request's (zero and "" when there is
	// none: the cluster had nothing to propose and none was open).
	Number int
	URL    string
	// Branch is the rolling branch; Commit the commit the run pushed to
	// it ("" when it pushed none).
	Branch, Commit string
	// Action is "opened", "updated", "unchanged" (the open pull request
	// already proposes exactly this), "closed" (the source no longer
	// changes the cluster) or "" (nothing open, nothing to propose).
	Action string
	// Replaced is the commit of someone else that the run found on the
	// rolling branch and rendered over (a note says so in the pull
	// request); "" when there was none.
	Replaced string
	// PlanFile is the full plan of the cluster (Markdown, beside it the
	// JSON) that the run wrote into Options.PlanDir, "" when none.
	PlanFile string
}

// DefaultPRBranch is the rolling branch of cluster when publish.yaml does
// not name one.
func DefaultPRBranch(cluster string) string { return "publish/" + cluster }

// prBranch is the cluster's rolling branch.
func (c ClusterOptions) prBranch() string {
	if c.PullRequest.Branch != "" {
		return c.PullRequest.Branch
	}
	return DefaultPRBranch(c.Name)
}

// CheckDelivery checks a delivery and its pull-request settings: errors
// name publish.yaml clusters.<cluster> and the flag.
func CheckDelivery(cluster, delivery string, pr PullRequestOptions) error {
	switch delivery {
	case "", DeliveryPush, DeliveryPullRequest:
	default:
		return fmt.Errorf("publish.yaml clusters.%s.delivery (or --delivery): %q is not one of push, pull-request", cluster, delivery)
	}
	switch pr.AutoMerge {
	case "", "merge", "squash", "rebase":
	default:
		return fmt.Errorf("publish.yaml clusters.%s.pullRequest.autoMerge (or --auto-merge): %q is not one of merge, squash, rebase", cluster, pr.AutoMerge)
	}
	if b := pr.Branch; b != "" && (strings.HasPrefix(b, "refs/") || strings.ContainsAny(b, " ~^:?*[\\") || strings.Contains(b, "..") || strings.HasSuffix(b, "/") || strings.HasSuffix(b, ".lock")) {
		return fmt.Errorf("publish.yaml clusters.%s.pullRequest.branch: %q is not a branch name (like publish/%s)", cluster, b, cluster)
	}
	return nil
}

// pullRequests reports whether a cluster of cls delivers by pull request.
func pullRequests(cls []ClusterOptions) bool {
	for _, c := range cls {
		if c.Delivery == DeliveryPullRequest {
			return true
		}
	}
	return false
}

// openForge opens the forge of a run with pull-request clusters and
// checks that its token may open pull requests, before anything is read
// or mirrored. Errors name --forge-token and the permission needed.
func openForge(ctx context.Context, o Options, cls []ClusterOptions) (forge.Forge, error) {
	for _, c := range cls {
		if c.Delivery != DeliveryPullRequest {
			continue
		}
		if c.OCI != "" {
			return nil, inputErr(fmt.Errorf("cluster %s: delivery: pull-request and an OCI catalog (--oci, publish.yaml clusters.%s.oci) cannot be combined: the cluster pulls the OCI catalog, so it would change before the pull request is reviewed. Use delivery: push for this cluster, or sync it from Git", c.Name, c.Name))
		}
		if c.prBranch() == o.Catalog.Branch {
			return nil, inputErr(fmt.Errorf("cluster %s: the pull-request branch %s is the catalog branch (--catalog-branch): set publish.yaml clusters.%s.pullRequest.branch to another", c.Name, o.Catalog.Branch, c.Name))
		}
	}
	if o.Forge == nil {
		return nil, inputErr(errors.New("pull-request delivery needs the forge of the catalog repo: give --forge-token (and --forge, --forge-api-url for a self-hosted forge)"))
	}
	f, err := o.Forge()
	if err != nil {
		return nil, inputErr(err)
	}
	if err := f.Check(ctx); err != nil {
		return nil, err
	}
	o.logf("forge: %s %s: the token may open pull requests", f.Kind(), f.Repo())
	return f, nil
}

// deliverPullRequests proposes the change of every pull-request cluster
// of prs (changes by cluster; nil: nothing to propose) as its pull
// request, before the direct commit of the run: a forge that refuses
// stops the run with nothing pushed to the catalog branch.
func deliverPullRequests(ctx context.Context, o Options, f forge.Forge, prs []*clusterRun, changes map[string][]catalog.Change, many bool) error {
	if f == nil {
		return errors.New("pull-request delivery: no forge was opened")
	}
	for _, cr := range prs {
		if err := deliverPullRequest(ctx, o, f, cr, changes[cr.r.Cluster], many); err != nil {
			if many {
				return fmt.Errorf("cluster %s: %w", cr.r.Cluster, err)
			}
			return err
		}
	}
	return nil
}

// deliverPullRequest is deliverPullRequests for one cluster: the rolling
// branch gets one commit of changes on the catalog tip (force-pushed: it
// is rendered again on every run, never merged as text), and the pull
// request from it is opened, updated, or closed when changes is nil.
func deliverPullRequest(ctx context.Context, o Options, f forge.Forge, cr *clusterRun, changes []catalog.Change, many bool) error {
	c := cr.r.cluster
	tip := cr.s.tip
	branch, base := c.prBranch(), o.Catalog.Branch
	res := &PullRequestResult{Branch: branch}
	cr.cres.PullRequest = res
	pr, err := f.Find(ctx, branch, base)
	if err != nil {
		return err
	}
	commit, origin := o.sourceCommit()
	var w *catalog.Written
	if changes != nil {
		msg, err := clustersCommitMessage(o.CommitTemplate, []*clusterRun{cr}, many, commit, origin)
		if err != nil {
			return inputErr(err)
		}
		if w, err = tip.Commit(changes, catalog.CommitOptionsFor(o.Catalog, msg, time.Now())); err != nil {
			return fmt.Errorf("committing the pull-request branch %s: %w", branch, err)
		}
	}
	if w == nil || w.Commit.IsZero() {
		if pr == nil {
			cr.r.logf("pull request: nothing to propose for cluster %s, none open", c.Name)
			return nil
		}
		note := fmt.Sprintf("publish: the package repo at %s no longer changes cluster `%s`: the catalog branch `%s` already has what this pull request proposed, so it is closed.", shortOr(commit, "this commit"), c.Name, base)
		if err := f.Close(ctx, pr.Number, note); err != nil {
			return err
		}
		res.Number, res.URL, res.Action = pr.Number, pr.URL, "closed"
		cr.r.logf("pull request: closed #%d (%s): the source no longer changes cluster %s", pr.Number, pr.URL, c.Name)
		if err := tip.DeleteBranch(ctx, branch); err != nil {
			cr.r.warnf("pull request: could not delete the branch %s: %v", branch, err)
		}
		return nil
	}
	mark := delivery.Marker{Cluster: c.Name, Base: tip.Head(), Tree: w.Tree.String(), Source: commit}
	var prev delivery.Marker
	if pr != nil {
		prev = delivery.ParseMarker(pr.Body)
		// The Git server says where the branch is; the forge's head may
		// lag behind a push (Gitea updates it from a queue).
		head, err := tip.BranchHead(ctx, branch)
		if err != nil {
			return err
		}
		if head == "" {
			head = pr.HeadSHA
		}
		if prev.Head != "" && prev.Head == head && prev.Tree == mark.Tree && prev.Base == mark.Base {
			res.Number, res.URL, res.Action, res.Commit = pr.Number, pr.URL, "unchanged", head
			cr.r.logf("pull request: #%d (%s) already proposes this change of cluster %s", pr.Number, pr.URL, c.Name)
			return nil
		}
		if prev.Head != "" && head != "" && head != prev.Head {
			res.Replaced = head
		}
	}
	was, err := tip.PushBranch(ctx, w, branch)
	if err != nil {
		return err
	}
	if res.Replaced == "" && was != "" && prev.Head != "" && was != prev.Head {
		res.Replaced = was // pushed between our look and our push
	}
	mark.Head = w.Commit.String()
	res.Commit = mark.Head
	cr.r.logf("pull request: pushed %s to %s", mark.Head[:12], branch)

	plan := clusterPlan(cr, changes, commit)
	if o.PlanDir != "" {
		if res.PlanFile, err = delivery.WritePlanFiles(o.PlanDir, c.Name, plan); err != nil {
			cr.r.warnf("pull request: could not write the full plan: %v", err)
		}
	}
	title := delivery.Title(report.ChangeSubject(cr.res.Changes.List()), c.Name)
	body := delivery.Body(plan, f.MaxBody(), o.JobURL, res.PlanFile, mark)
	ch := forge.Change{Title: title, Body: body, Labels: c.PullRequest.Labels}
	if pr == nil {
		if pr, err = f.Create(ctx, branch, base, ch); err != nil {
			return err
		}
		res.Action = "opened"
	} else {
		if pr, err = f.Update(ctx, pr.Number, ch); err != nil {
			return err
		}
		res.Action = "updated"
	}
	res.Number, res.URL = pr.Number, pr.URL
	cr.r.logf("pull request: %s #%d (%s)", res.Action, pr.Number, pr.URL)
	if res.Replaced != "" {
		note := fmt.Sprintf("publish: the branch `%s` had commit %s, which publish did not write. It was rendered again over it from the package repo at %s: the catalog of a cluster comes from the package repo and the overlays on `%s`, so change those instead (a commit pushed to this branch is replaced by the next run).", branch, res.Replaced, shortOr(commit, "this commit"), base)
		if err := f.Comment(ctx, pr.Number, note); err != nil {
			return err
		}
		cr.r.warnf("pull request: the branch %s had commit %s by someone else: rendered over it, with a note in #%d", branch, short(res.Replaced), pr.Number)
	}
	if m := c.PullRequest.AutoMerge; m != "" {
		switch err := f.AutoMerge(ctx, pr, m); {
		case errors.Is(err, forge.ErrAutoMergeUnsupported):
			cr.r.warnf("pull request: auto-merge (%s) is not available for #%d: %v; it waits for a person to merge it", m, pr.Number, err)
		case err != nil:
			return err
		}
	}
	return nil
}

// clusterPlan is the plan of what the run proposes for the cluster: the
// listing changes, the images it mirrored for them, the lint findings and
// the rendered files with their diff (the same report.Plan `publish plan`
// makes).
func clusterPlan(cr *clusterRun, changes []catalog.Change, commit string) *report.Plan {
	p := &report.Plan{SchemaVersion: report.PlanSchemaVersion, Cluster: cr.r.Cluster, Artifacts: []report.PlanArtifact{}, Findings: []lint.Finding{}, Files: nil}
	p.Source.Head = commit
	if d := cr.res.Diff; d != nil {
		p.Source = report.PlanSource{Head: d.Head, Base: d.Base, BaseFrom: d.BaseFrom, All: d.All, Warnings: d.Warnings}
	}
	next := render.Merge(cr.s.state.Artifacts, cr.current)
	p.Artifacts = planArtifacts(cr.s.state.Artifacts, next, cr.vs)
	listing := append([]model.Change{}, render.Diff(cr.s.state.Artifacts, next).List()...)
	dst := map[string]string{}
	if cr.res.Mirror != nil {
		for _, r := range cr.res.Mirror.Images {
			dst[r.Source] = r.Destination
		}
	}
	planImages(p.Artifacts, cr.vs, cr.res.Verified, mirroredAt(dst))
	if cr.res.Findings != nil {
		p.Findings = cr.res.Findings
	}
	if files, patch, err := cr.s.preview(changes); err == nil {
		p.Files, p.Diff = files, patch
	} else {
		p.Source.Warnings = append(p.Source.Warnings, "the rendered diff could not be made: "+err.Error())
	}
	p.Summarise(listing)
	return p
}
