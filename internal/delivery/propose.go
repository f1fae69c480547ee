package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/report"
)

// Branches is what Propose needs of the catalog repo: the tip of the
// catalog branch to commit on (Head, Commit) and the rolling branch on
// the Git server (BranchHead, PushBranch, DeleteBranch). *catalog.Tip
// implements it; the methods are documented there.
type Branches interface {
	// Head is the commit of the catalog branch's tip ("" when the branch
	// has none).
	Head() string
	// Commit writes, without pushing, the commit of changes on the tip;
	// its Written.Commit is zero when the tip already has them.
	Commit(changes []catalog.Change, o catalog.CommitOptions) (*catalog.Written, error)
	// BranchHead is the commit branch is at on the Git server now ("" when
	// it does not exist).
	BranchHead(ctx context.Context, branch string) (string, error)
	// PushBranch force-pushes w to branch and returns the commit branch
	// was at ("" when it did not exist).
	PushBranch(ctx context.Context, w *catalog.Written, branch string) (string, error)
	// DeleteBranch removes branch; one that does not exist is no error.
	DeleteBranch(ctx context.Context, branch string) error
}

var _ Branches = (*catalog.Tip)(nil)

// Proposal is the change of one cluster that Propose turns into the
// cluster's pull request, and how to write it.
type Proposal struct {
	// Cluster is the cluster's name (in the title, the body, the marker,
	// the plan files and the notes).
	Cluster string
	// Branch is the rolling branch the change is force-pushed to; Base
	// the catalog branch, the pull request's base.
	Branch, Base string
	// Changes is the cluster's change to the catalog tip (relative to the
	// catalog root, as catalog.Tip.Commit takes them); nil when the source
	// no longer changes the cluster: an open pull request is closed.
	Changes []catalog.Change
	// Message returns the commit message of Changes. Propose calls it
	// once, only when Changes is not nil, after it looked for the open
	// pull request; its error is returned as it is.
	Message func() (string, error)
	// Commit is the author, committer and signer of the commit; Propose
	// sets its Message (from Message) and the When of its Author and
	// Committer (from Now).
	Commit catalog.CommitOptions
	// Now is the clock of the commit's time; nil is time.Now.
	Now func() time.Time
	// Plan returns the plan of the change (the body of the pull request
	// and the plan files). Propose calls it once, after the push, only
	// when it opens or updates the pull request.
	Plan func() *report.Plan
	// Subject is the commit subject of the cluster's listing changes
	// (report.ChangeSubject), the start of the title (Title).
	Subject string
	// Labels are added to the pull request (existing ones are kept).
	Labels []string
	// AutoMerge, when set ("merge", "squash" or "rebase"), asks the forge
	// to merge the pull request once its checks pass; a forge that
	// cannot (forge.ErrAutoMergeUnsupported) gets a warning.
	AutoMerge string
	// Source is the source commit the change was rendered from ("" when
	// unknown), in the marker and the notes.
	Source string
	// PlanDir, when set, receives the full plan files (WritePlanFiles);
	// JobURL is the CI job that keeps them ("" when unknown), named in the
	// body.
	PlanDir, JobURL string
	// Approvers must approve the pull request (those of
	// publish.yaml clusters.<name>.pullRequest.approvers that apply to the
	// change's artifacts); none: no approval is checked. When set, the
	// catalog branch's protection is read (forge.Reviews): what it lacks
	// is a warning and a note in the body, with how to set it, and
	// auto-merge is then not asked for (the forge would merge before they
	// approved); and the cluster's last merged pull request is read with
	// who approved it (Result.Approval).
	Approvers []forge.Approvers
	// Evidence are lines of the gates' evidence for the versions proposed
	// (when each was listed upstream), listed in the body.
	Evidence []string
	// Log receives the progress lines (Info) and warnings (Warn); nil
	// discards them.
	Log *slog.Logger
}

// Result is what Propose did with the pull request of a cluster.
type Result struct {
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
	// Unrequired says what the catalog branch's protection lacks to
	// require Proposal.Approvers, "; "-separated ("" when it requires
	// them or there are none).
	Unrequired string
	// Approval is the cluster's pull request the forge merged last, with
	// who approved it (nil when Proposal.Approvers is empty or none was
	// merged).
	Approval *Approval
	// PlanFile is the full plan of the cluster (Markdown, beside it the
	// JSON) that the run wrote into Proposal.PlanDir, "" when none.
	PlanFile string
}

// proposer is one call of Propose.
type proposer struct {
	f   forge.Forge
	b   Branches
	p   Proposal
	res *Result
	log *slog.Logger
}

// logf logs a progress line ("pull request: ...") at level Info.
func (q *proposer) logf(format string, args ...any) { q.log.Info(fmt.Sprintf(format, args...)) }

// warnf logs, at level Warn, what does not stop the delivery.
func (q *proposer) warnf(format string, args ...any) { q.log.Warn(fmt.Sprintf(format, args...)) }

// Propose delivers p as the pull request of p.Cluster on the forge f:
// the rolling branch gets one commit of p.Changes on the catalog tip of b
// (force-pushed: it is rendered again on every run, never merged as
// text), and the pull request from it into p.Base is opened, updated
// (its title, body with the plan and the marker, and labels), left as it
// is when its marker says it already proposes this ("unchanged"), or
// closed, its branch deleted, when p.Changes is nil or already on the
// tip. A commit of someone else found on the rolling branch is rendered
// over, with a comment in the pull request; auto-merge is asked for when
// p.AutoMerge is set.
//
// It returns the Result, which is never nil: on an error it holds what
// was done until then. Errors: p.Message's as it is; the commit's
// (wrapped, naming the rolling branch); the forge's and the Git server's
// as they are. A plan file that cannot be written, a branch that cannot
// be deleted and a forge without auto-merge are warnings in p.Log.
func Propose(ctx context.Context, f forge.Forge, b Branches, p Proposal) (*Result, error) {
	q := &proposer{f: f, b: b, p: p, res: &Result{Branch: p.Branch}, log: p.Log}
	if q.log == nil {
		q.log = slog.New(slog.DiscardHandler)
	}
	if q.p.Now == nil {
		q.p.Now = time.Now
	}
	return q.res, q.propose(ctx)
}

// propose is Propose, filling q.res.
func (q *proposer) propose(ctx context.Context) error {
	p, res := q.p, q.res
	var err error
	if res.Approval, err = q.lastApproval(ctx); err != nil {
		return err
	}
	pr, err := q.f.Find(ctx, p.Branch, p.Base)
	if err != nil {
		return err
	}
	var w *catalog.Written
	if p.Changes != nil {
		if w, err = q.commit(); err != nil {
			return err
		}
	}
	if w == nil || w.Commit.IsZero() {
		return q.close(ctx, pr)
	}
	mark := Marker{Cluster: p.Cluster, Base: q.b.Head(), Tree: w.Tree.String(), Source: p.Source}
	var prev Marker
	if pr != nil {
		prev = ParseMarker(pr.Body)
		// The Git server says where the branch is; the forge's head may
		// lag behind a push (Gitea updates it from a queue).
		head, err := q.b.BranchHead(ctx, p.Branch)
		if err != nil {
			return err
		}
		if head == "" {
			head = pr.HeadSHA
		}
		if prev.Head != "" && prev.Head == head && prev.Tree == mark.Tree && prev.Base == mark.Base {
			res.Number, res.URL, res.Action, res.Commit = pr.Number, pr.URL, "unchanged", head
			q.logf("pull request: #%d (%s) already proposes this change of cluster %s", pr.Number, pr.URL, p.Cluster)
			return nil
		}
		if prev.Head != "" && head != "" && head != prev.Head {
			res.Replaced = head
		}
	}
	was, err := q.b.PushBranch(ctx, w, p.Branch)
	if err != nil {
		return err
	}
	if res.Replaced == "" && was != "" && prev.Head != "" && was != prev.Head {
		res.Replaced = was // pushed between our look and our push
	}
	mark.Head = w.Commit.String()
	res.Commit = mark.Head
	q.logf("pull request: pushed %s to %s", mark.Head[:12], p.Branch)
	if pr, err = q.write(ctx, pr, mark); err != nil {
		return err
	}
	return q.after(ctx, pr)
}

// commit writes the commit of the proposal's changes on the tip, with
// the message of p.Message at the time of p.Now.
func (q *proposer) commit() (*catalog.Written, error) {
	msg, err := q.p.Message()
	if err != nil {
		return nil, err
	}
	o := q.p.Commit
	now := q.p.Now()
	o.Message, o.Author.When, o.Committer.When = msg, now, now
	w, err := q.b.Commit(q.p.Changes, o)
	if err != nil {
		return nil, fmt.Errorf("committing the pull-request branch %s: %w", q.p.Branch, err)
	}
	return w, nil
}

// close is Propose with nothing to propose: the open pull request pr
// (nil: none) is closed with a note and its branch deleted.
func (q *proposer) close(ctx context.Context, pr *forge.PullRequest) error {
	p, res := q.p, q.res
	if pr == nil {
		q.logf("pull request: nothing to propose for cluster %s, none open", p.Cluster)
		return nil
	}
	note := fmt.Sprintf("publish: the package repo at %s no longer changes cluster `%s`: the catalog branch `%s` already has what this pull request proposed, so it is closed.", report.ShortCommitOr(p.Source, "this commit"), p.Cluster, p.Base)
	if err := q.f.Close(ctx, pr.Number, note); err != nil {
		return err
	}
	res.Number, res.URL, res.Action = pr.Number, pr.URL, "closed"
	q.logf("pull request: closed #%d (%s): the source no longer changes cluster %s", pr.Number, pr.URL, p.Cluster)
	if err := q.b.DeleteBranch(ctx, p.Branch); err != nil {
		q.warnf("pull request: could not delete the branch %s: %v", p.Branch, err)
	}
	return nil
}

// write writes the plan files and opens the pull request (pr nil) or
// updates pr, with the title, the body of the plan and mark, and the
// labels; it returns the forge's pull request.
func (q *proposer) write(ctx context.Context, pr *forge.PullRequest, mark Marker) (*forge.PullRequest, error) {
	p, res := q.p, q.res
	plan := p.Plan()
	if p.PlanDir != "" {
		var err error
		if res.PlanFile, err = WritePlanFiles(p.PlanDir, p.Cluster, plan); err != nil {
			q.warnf("pull request: could not write the full plan: %v", err)
		}
	}
	missing, how, err := q.checkApprovals(ctx)
	if err != nil {
		return nil, err
	}
	res.Unrequired = strings.Join(missing, "; ")
	review := ReviewMarkdown(p.Approvers, missing, how, p.Evidence)
	ch := forge.Change{Title: Title(p.Subject, p.Cluster), Body: BodyWith(plan, q.f.MaxBody(), p.JobURL, res.PlanFile, mark, review), Labels: p.Labels}
	if pr == nil {
		if pr, err = q.f.Create(ctx, p.Branch, p.Base, ch); err != nil {
			return nil, err
		}
		res.Action = "opened"
	} else {
		if pr, err = q.f.Update(ctx, pr.Number, ch); err != nil {
			return nil, err
		}
		res.Action = "updated"
	}
	res.Number, res.URL = pr.Number, pr.URL
	q.logf("pull request: %s #%d (%s)", res.Action, pr.Number, pr.URL)
	return pr, nil
}

// after is what follows the pull request pr written: the note on a
// replaced commit and the request of auto-merge.
func (q *proposer) after(ctx context.Context, pr *forge.PullRequest) error {
	p, res := q.p, q.res
	if res.Replaced != "" {
		note := fmt.Sprintf("publish: the branch `%s` had commit %s, which publish did not write. It was rendered again over it from the package repo at %s: the catalog of a cluster comes from the package repo and the overlays on `%s`, so change those instead (a commit pushed to this branch is replaced by the next run).", p.Branch, res.Replaced, report.ShortCommitOr(p.Source, "this commit"), p.Base)
		if err := q.f.Comment(ctx, pr.Number, note); err != nil {
			return err
		}
		q.warnf("pull request: the branch %s had commit %s by someone else: rendered over it, with a note in #%d", p.Branch, report.ShortCommit(res.Replaced), pr.Number)
	}
	if res.Commit != "" && q.f.Kind() == forge.KindGitea {
		pr.HeadSHA = res.Commit // what was pushed: Gitea's answer lags behind it (its head comes from a queue)
	}
	if m := p.AutoMerge; m != "" && res.Unrequired != "" {
		q.warnf("pull request: auto-merge (%s) is not asked for #%d: the catalog branch does not require the approval of cluster %s's approvers, so the forge would merge it before they approved", m, pr.Number, p.Cluster)
	} else if m != "" {
		switch err := q.f.AutoMerge(ctx, pr, m); {
		case errors.Is(err, forge.ErrAutoMergeUnsupported):
			q.warnf("pull request: auto-merge (%s) is not available for #%d: %v; it waits for a person to merge it", m, pr.Number, err)
		case err != nil:
			return err
		}
	}
	return nil
}
