package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
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
	mark := marker{Cluster: c.Name, Base: tip.Head(), Tree: w.Tree.String(), Source: commit}
	var prev marker
	if pr != nil {
		prev = parseMarker(pr.Body)
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
		if res.PlanFile, err = writePlanFiles(o.PlanDir, c.Name, plan); err != nil {
			cr.r.warnf("pull request: could not write the full plan: %v", err)
		}
	}
	title := prTitle(cr.res.Changes, c.Name)
	body := prBody(plan, f.MaxBody(), o.JobURL, res.PlanFile, mark)
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

// marker is what publish writes, hidden, at the end of the body of a pull
// request it opened: the rolling branch's commit, its tree, the catalog
// commit it was written on, and the source commit. A later run compares
// them with the forge's head commit to tell an unchanged proposal (nothing
// to do) from a branch someone else pushed to.
type marker struct {
	Cluster, Head, Tree, Base, Source string
}

var markerRE = regexp.MustCompile(`<!-- publish:pull-request ([^>]*) -->`)

func (m marker) String() string {
	return fmt.Sprintf("<!-- publish:pull-request cluster=%s head=%s tree=%s base=%s source=%s -->", m.Cluster, m.Head, m.Tree, orDash(m.Base), orDash(m.Source))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// parseMarker reads the marker of a body (zero when there is none: a body
// someone rewrote).
func parseMarker(body string) marker {
	var m marker
	sub := markerRE.FindStringSubmatch(body)
	if sub == nil {
		return m
	}
	for _, kv := range strings.Fields(sub[1]) {
		k, v, _ := strings.Cut(kv, "=")
		if v == "-" {
			v = ""
		}
		switch k {
		case "cluster":
			m.Cluster = v
		case "head":
			m.Head = v
		case "tree":
			m.Tree = v
		case "base":
			m.Base = v
		case "source":
			m.Source = v
		}
	}
	return m
}

// prTitle is the title of a cluster's pull request: the commit subject
// of its changes, naming the cluster.
func prTitle(ch render.Changes, cluster string) string {
	return ChangeSubject(ch.List()) + " on cluster " + cluster
}

// clusterPlan is the plan of what the run proposes for the cluster: the
// listing changes, the images it mirrored for them, the lint findings and
// the rendered files with their diff (the same Plan `publish plan` makes).
func clusterPlan(cr *clusterRun, changes []catalog.Change, commit string) *Plan {
	p := &Plan{SchemaVersion: PlanSchemaVersion, Cluster: cr.r.Cluster, Artifacts: []PlanArtifact{}, Findings: []lint.Finding{}, Files: nil}
	p.Source.Head = commit
	if d := cr.res.Diff; d != nil {
		p.Source = PlanSource{Head: d.Head, Base: d.Base, BaseFrom: d.BaseFrom, All: d.All, Warnings: d.Warnings}
	}
	next := render.Merge(cr.s.state.Artifacts, cr.current)
	p.Artifacts = planArtifacts(cr.s.state.Artifacts, next, cr.vs)
	p.changes = append([]model.Change{}, render.Diff(cr.s.state.Artifacts, next).List()...)
	dst := map[string]string{}
	if cr.res.Mirror != nil {
		for _, r := range cr.res.Mirror.Images {
			dst[r.Source] = r.Destination
		}
	}
	planImagesMirrored(p.Artifacts, cr.vs, dst, cr.res.Verified)
	if cr.res.Findings != nil {
		p.Findings = cr.res.Findings
	}
	if files, patch, err := cr.s.preview(changes); err == nil {
		p.Files, p.Diff = files, patch
	} else {
		p.Source.Warnings = append(p.Source.Warnings, "the rendered diff could not be made: "+err.Error())
	}
	p.summarise()
	return p
}

// maxBodyMargin is kept free below the forge's limit on a body: the
// marker and the link to the full plan.
const maxBodyMargin = 2000

// prBody is the body of a cluster's pull request: the plan in Markdown
// (Plan.Markdown: the listing changes, the images, the lint findings and
// the rendered diff, collapsed), kept under limit bytes (the forge's MaxBody;
// bytes are never fewer than characters): the diff is left out first, then the plan is cut at a line,
// each time saying where the full plan is (the CI job's files, jobURL);
// then the marker.
func prBody(p *Plan, limit int, jobURL, planFile string, m marker) string {
	where := "the full plan is in the files of the CI job that opened it"
	if planFile != "" {
		where = "the full plan is `" + filepath.Base(planFile) + "` (and its `.json`) in the files of the CI job that opened it"
	}
	if jobURL != "" {
		where += ": " + jobURL
	}
	head := fmt.Sprintf("This pull request was opened by `publish run` for cluster `%s`. Merging it publishes the change below to the cluster; publish re-renders this branch on every run (commits pushed to it are replaced), and closes the pull request when the package repo no longer changes the cluster.\n\n", p.Cluster)
	tail := "\n---\n" + upper(where) + ".\n\n" + m.String() + "\n"
	body := head + p.Markdown() + tail
	if limit <= 0 || len(body) <= limit {
		return body
	}
	short := *p
	short.Diff = ""
	note := fmt.Sprintf("> The rendered diff (%d lines) is too long for the pull request: see the *Files changed* tab; %s.\n\n", strings.Count(p.Diff, "\n"), where)
	body = head + note + short.Markdown() + tail
	if len(body) <= limit {
		return body
	}
	budget := limit - len(head+note+tail) - maxBodyMargin
	md := short.Markdown()
	cut := 0
	for i := 0; i < len(md) && i < budget; i++ {
		if md[i] == '\n' {
			cut = i + 1
		}
	}
	return head + note + md[:cut] + "\n… the plan is cut here: " + where + ".\n" + tail
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// writePlanFiles writes the full plan of a cluster into dir as
// <cluster>.md (Plan.Markdown with the whole diff) and <cluster>.json
// (docs/plan-json.md), for the CI job to keep as its files (an artifact);
// it returns the Markdown file's path.
func writePlanFiles(dir, cluster string, p *Plan) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	md := filepath.Join(dir, cluster+".md")
	full := p.Markdown()
	if strings.Count(p.Diff, "\n") > maxDiffLines {
		full += "\n### Full diff\n\n```diff\n" + p.Diff + "\n```\n"
	}
	if err := os.WriteFile(md, []byte(full), 0o644); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return "", err
	}
	return md, os.WriteFile(filepath.Join(dir, cluster+".json"), append(data, '\n'), 0o644)
}

// planImagesMirrored fills the images of each added, modified or relisted
// version of arts as the run mirrored them: dst maps a source reference
// to its destination (the mirror report). An image the report lacks is
// "unknown" at the destination, with the UnknownReason reasonNotMirrored.
func planImagesMirrored(arts []PlanArtifact, vs []*model.Version, dst map[string]string, verified map[string]model.Verification) {
	byKey := map[model.Key]*model.Version{}
	for _, v := range vs {
		byKey[v.Key()] = v
	}
	for ai := range arts {
		for vi, v := range arts[ai].Versions {
			mv, ok := byKey[model.Key{Artifact: arts[ai].Name, Version: v.Version}]
			if v.Action == "delisted" || !ok {
				continue
			}
			for _, r := range append(unique(mv.Images), mv.Ref()) {
				pi := PlanImage{Source: r, Destination: dst[r], AtDestination: "yes"}
				if pi.Destination == "" {
					pi.AtDestination, pi.UnknownReason = "unknown", reasonNotMirrored
				}
				if res, ok := verified[r]; ok {
					pi.Verification = &res
				}
				arts[ai].Versions[vi].Images = append(arts[ai].Versions[vi].Images, pi)
			}
		}
	}
}
