package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/delivery"
	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/report"
)

// approversFor returns the approvers of cr's cluster that apply to its
// change (publish.yaml clusters.<name>.pullRequest.approvers, an entry with
// artifacts applying when one of the changed artifacts matches it).
func approversFor(cr *clusterRun) []forge.Approvers {
	var names []string
	for _, c := range cr.res.Changes.List() {
		names = append(names, c.Artifact)
	}
	var out []forge.Approvers
	for _, a := range cr.r.cluster.PullRequest.Approvers {
		if a.Applies(names) {
			out = append(out, a)
		}
	}
	return out
}

// gateEvidence returns the gates' evidence (rollout.Gates.Evidence) of
// the versions cr's change lists, for the pull request's body; none for a
// cluster without gates.
func gateEvidence(cr *clusterRun) []string {
	if cr.s.gates == nil {
		return nil
	}
	var out []string
	for _, c := range cr.res.Changes.List() {
		if c.Kind == model.ChangeDelisted {
			continue
		}
		for _, v := range c.Versions {
			out = append(out, cr.s.gates.gates.Evidence(c.Artifact, v)...)
		}
	}
	return out
}

// approvalRecords returns, for the pull-request clusters of prs whose
// last merged pull request (delivery.Result.Approval) their state does not
// record yet, the change of their state file on the tip with the record
// appended (the approvers, and the bundle digests the merge listed on the
// cluster: mergedDigests): the run commits it to the catalog branch, an
// audit record that lists nothing. It also returns a line per record for
// the commit message.
func approvalRecords(ctx context.Context, o Options, prs []*clusterRun) ([]catalog.Change, []string, error) {
	var changes []catalog.Change
	var lines []string
	var full *catalog.Tip // the catalog with its history, opened when a merge is not in the tip's objects
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	for _, cr := range prs {
		pr := cr.cres.PullRequest
		if pr == nil || pr.Approval == nil {
			continue
		}
		a := pr.Approval
		if slices.ContainsFunc(cr.s.state.Approvals, func(r model.ApprovalRecord) bool { return r.PullRequest == a.Number }) {
			continue
		}
		sp := gitops.StatePath(cr.r.Cluster)
		data, ok, err := cr.s.tip.ReadFile(sp)
		if err != nil {
			return nil, nil, fmt.Errorf("recording the approvals of pull request #%d: reading %s: %w", a.Number, sp, err)
		}
		if !ok {
			cr.r.warnf("pull request: #%d of cluster %s was merged, but the catalog branch has no %s to record its approvals in", a.Number, cr.r.Cluster, sp)
			continue
		}
		st, err := gitops.ParseState(sp, data)
		if err != nil {
			return nil, nil, err
		}
		digests, err := mergedDigests(ctx, o, cr, a, &full)
		if err != nil {
			return nil, nil, err
		}
		rec := model.ApprovalRecord{PullRequest: a.Number, URL: a.URL, Commit: a.Commit, MergedAt: a.MergedAt, Approvers: a.Approvers, Digests: digests}
		if rec.Approvers == nil {
			rec.Approvers = []string{}
		}
		st.Approvals = append(st.Approvals, rec)
		out, err := st.Marshal()
		if err != nil {
			return nil, nil, err
		}
		changes = append(changes, catalog.Change{Path: sp, Data: out})
		lines = append(lines, fmt.Sprintf("cluster %s: pull request #%d approved by %v", cr.r.Cluster, a.Number, rec.Approvers))
		cr.r.logf("pull request: #%d of cluster %s was merged (%s), approved by %v, listing %d bundle digests: recorded in %s", a.Number, cr.r.Cluster, report.ShortCommit(a.Commit), rec.Approvers, len(digests), sp)
	}
	return changes, lines, nil
}

// mergedDigests returns the bundle digests the merged pull request a
// listed on cr's cluster: the versions its merge commit added or changed
// in the cluster's state (catalog.Tip.StatesAround, model.ChangedDigests),
// not every version the cluster lists. A merge commit the run's tip does
// not hold with its parent (a remote catalog is fetched shallow unless a
// cluster has gates) is read from the catalog branch fetched with its
// history, opened once into *full for every cluster of the run. A merge
// commit not on the catalog branch (rewritten since) is a warning and no
// digests. Errors: the catalog cannot be fetched, or a state file there
// does not parse.
func mergedDigests(ctx context.Context, o Options, cr *clusterRun, a *delivery.Approval, full **catalog.Tip) ([]model.ApprovedDigest, error) {
	if a.Commit == "" {
		cr.r.warnf("pull request: the forge names no merge commit of #%d of cluster %s: its approval is recorded without digests", a.Number, cr.r.Cluster)
		return []model.ApprovedDigest{}, nil
	}
	before, after, err := cr.s.tip.StatesAround(a.Commit, cr.r.Cluster)
	if errors.Is(err, catalog.ErrNotFetched) {
		if *full == nil {
			co := o.Catalog
			co.History = true
			o.logf("pull request: fetching the history of the catalog branch %s to read what #%d of cluster %s changed", cr.s.tip.Branch(), a.Number, cr.r.Cluster)
			if *full, err = catalog.OpenTip(ctx, co); err != nil {
				return nil, err
			}
		}
		before, after, err = (*full).StatesAround(a.Commit, cr.r.Cluster)
	}
	if errors.Is(err, catalog.ErrNotFetched) {
		cr.r.warnf("pull request: the merge commit %s of #%d of cluster %s is not on the catalog branch %s: its approval is recorded without digests", report.ShortCommit(a.Commit), a.Number, cr.r.Cluster, cr.s.tip.Branch())
		return []model.ApprovedDigest{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("recording the approvals of pull request #%d: %w", a.Number, err)
	}
	var b, at []model.ArtifactRecord
	if before != nil {
		b = before.Artifacts
	}
	if after != nil {
		at = after.Artifacts
	}
	return model.ChangedDigests(b, at), nil
}

// proposeAndRecord delivers the pull requests of prs
// (deliverPullRequests; none: nothing) and returns the approval records
// of their merged pull requests (approvalRecords).
func proposeAndRecord(ctx context.Context, o Options, f forge.Forge, prs []*clusterRun, proposed map[string][]catalog.Change, many bool) ([]catalog.Change, []string, error) {
	if len(prs) == 0 {
		return nil, nil, nil
	}
	if err := deliverPullRequests(ctx, o, f, prs, proposed, many); err != nil {
		return nil, nil, err
	}
	return approvalRecords(ctx, o, prs)
}

// withRecords appends the lines of the approval records to a commit
// message.
func withRecords(msg string, recorded []string) string {
	if len(recorded) == 0 {
		return msg
	}
	return strings.TrimRight(msg, "\n") + "\n\nRecorded approvals:\n" + strings.Join(recorded, "\n") + "\n"
}

// commitRecords commits and pushes the approval records alone (the run
// changed no listing) to the catalog branch, setting res.Commit and
// res.Files.
func commitRecords(ctx context.Context, o Options, tip *catalog.Tip, records []catalog.Change, recorded []string, res *Result) error {
	msg := "publish: record the approvals of merged pull requests\n\n" + strings.Join(recorded, "\n") + "\n"
	w, err := tip.Commit(records, catalog.CommitOptionsFor(o.Catalog, msg, o.now()))
	if err != nil {
		return fmt.Errorf("committing catalog: %w", err)
	}
	if w.Commit.IsZero() {
		return nil
	}
	o.logf("catalog: pushing %s to %s (approval records)", w.Commit.String()[:12], o.Catalog.Branch)
	if _, err := tip.Push(ctx, w); err != nil {
		return err
	}
	res.Commit, res.Files = w.Commit.String(), w.Files
	return nil
}
