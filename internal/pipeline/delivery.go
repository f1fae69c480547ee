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
	// Approvers must approve the pull request (publish.yaml
	// clusters.<name>.pullRequest.approvers): the catalog branch's
	// protection is checked to require them, auto-merge waits for them,
	// and the run after the merge records who approved in the cluster's
	// state (docs/pull-requests.md).
	Approvers []forge.Approvers
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
// request (delivery.Propose on the cluster's tip, the Result in the
// cluster's PullRequest, also on an error), before the direct commit of
// the run: a forge that refuses stops the run with nothing pushed to the
// catalog branch.
func deliverPullRequests(ctx context.Context, o Options, f forge.Forge, prs []*clusterRun, changes map[string][]catalog.Change, many bool) error {
	if f == nil {
		return errors.New("pull-request delivery: no forge was opened")
	}
	for _, cr := range prs {
		res, err := delivery.Propose(ctx, f, cr.s.tip, clusterProposal(o, cr, changes[cr.r.Cluster], many))
		cr.cres.PullRequest = res
		if err != nil {
			if many {
				return fmt.Errorf("cluster %s: %w", cr.r.Cluster, err)
			}
			return err
		}
	}
	return nil
}

// clusterProposal is the proposal of changes (nil: nothing to propose)
// for the pull request of cr's cluster: its rolling branch into the
// catalog branch, its commit message (clustersCommitMessage, an error of
// the template an input error), the run's commit identity and clock, its
// plan (clusterPlan), title subject, labels and auto-merge, and the run's
// source commit, plan directory, job URL and logger. many: the run has
// several clusters.
func clusterProposal(o Options, cr *clusterRun, changes []catalog.Change, many bool) delivery.Proposal {
	c := cr.r.cluster
	commit, origin := o.sourceCommit()
	return delivery.Proposal{
		Cluster: c.Name,
		Branch:  c.prBranch(),
		Base:    o.Catalog.Branch,
		Changes: changes,
		Message: func() (string, error) {
			msg, err := clustersCommitMessage(o.CommitTemplate, []*clusterRun{cr}, many, commit, origin)
			if err != nil {
				return "", inputErr(err)
			}
			return msg, nil
		},
		Commit:    catalog.CommitOptionsFor(o.Catalog, "", time.Time{}),
		Now:       time.Now,
		Plan:      func() *report.Plan { return clusterPlan(cr, changes, commit) },
		Subject:   report.ChangeSubject(cr.res.Changes.List()),
		Labels:    c.PullRequest.Labels,
		AutoMerge: c.PullRequest.AutoMerge,
		Approvers: approversFor(cr),
		Evidence:  gateEvidence(cr),
		Source:    commit,
		PlanDir:   o.PlanDir,
		JobURL:    o.JobURL,
		Log:       cr.r.logger(),
	}
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
