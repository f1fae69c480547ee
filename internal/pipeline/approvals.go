package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/operator-publish/publish/internal/catalog"
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
// appended (the approvers, and the digests the cluster lists at the tip,
// which has the merge): the run commits it to the catalog branch, an
// audit record that lists nothing. It also returns a line per record for
// the commit message.
func approvalRecords(prs []*clusterRun) ([]catalog.Change, []string, error) {
	var changes []catalog.Change
	var lines []string
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
		rec := model.ApprovalRecord{PullRequest: a.Number, URL: a.URL, Commit: a.Commit, MergedAt: a.MergedAt, Approvers: a.Approvers, Digests: model.ListedDigests(st.Artifacts)}
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
		cr.r.logf("pull request: #%d of cluster %s was merged (%s), approved by %v: recorded in %s", a.Number, cr.r.Cluster, report.ShortCommit(a.Commit), rec.Approvers, sp)
	}
	return changes, lines, nil
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
	return approvalRecords(prs)
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
