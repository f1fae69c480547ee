package delivery

import (
	"context"
	"fmt"
	"strings"

	"github.com/operator-publish/publish/internal/forge"
)

// Approval is the record of a cluster's pull request that the forge
// merged: which one, its merge commit, when, and who approved it, as the
// forge's review API reports it (publish/state/<cluster>.yaml keeps it,
// with the bundle digests the merge listed).
type Approval struct {
	Number int
	URL    string
	Commit string
	// MergedAt is when the forge merged it, RFC 3339 in UTC.
	MergedAt string
	// Approvers are the logins that approved, in the order of their
	// reviews, each once.
	Approvers []string
}

// ReviewMarkdown is the part of a pull request's body that names the
// approvers the cluster needs (approvers), whether the catalog branch
// requires them (missing: what its protection lacks, and how, how to set
// it; both empty when it requires them) and the gate evidence of the
// versions proposed (one line each). It is "" when there are neither
// approvers nor evidence.
func ReviewMarkdown(approvers []forge.Approvers, missing []string, how string, evidence []string) string {
	if len(approvers) == 0 && len(evidence) == 0 {
		return ""
	}
	var b strings.Builder
	if len(approvers) > 0 {
		b.WriteString("### Approvers\n\n")
		for _, a := range approvers {
			who := append(append([]string{}, at(a.Users)...), at(a.Teams)...)
			scope := "every artifact"
			if a.Artifacts != "" {
				scope = "artifacts `" + a.Artifacts + "`"
			}
			fmt.Fprintf(&b, "- %s, for %s\n", strings.Join(who, ", "), scope)
		}
		if len(missing) == 0 {
			b.WriteString("\nThe catalog branch's protection requires their approval: the forge merges this pull request only after they approved it.\n\n")
		} else {
			fmt.Fprintf(&b, "\n> **The catalog branch does not require these approvals**: %s. Auto-merge is not asked for. To require them, %s.\n\n", strings.Join(missing, "; "), how)
		}
	}
	if len(evidence) > 0 {
		b.WriteString("### Gate evidence\n\n")
		for _, e := range evidence {
			b.WriteString("- " + e + "\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func at(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "@" + n
	}
	return out
}

// checkApprovals reads the protection of the catalog branch when the
// proposal names approvers and the forge reads reviews: it returns what
// the protection lacks (none: it requires them) and how to set it, and
// logs a warning when it lacks something. A forge that does not read
// protection (not a forge.Reviews) lacks everything.
func (q *proposer) checkApprovals(ctx context.Context) ([]string, string, error) {
	p := q.p
	if len(p.Approvers) == 0 {
		return nil, "", nil
	}
	how := forge.HowTo(q.f.Kind(), q.f.Repo(), p.Base, p.Approvers)
	rv, ok := q.f.(forge.Reviews)
	if !ok {
		return []string{"publish cannot read this forge's branch protection"}, how, nil
	}
	prot, err := rv.Protection(ctx, p.Base)
	if err != nil {
		return nil, "", err
	}
	missing := prot.Missing(p.Approvers)
	if len(missing) > 0 {
		q.warnf("pull request: cluster %s names approvers, but the catalog branch %s does not require their approval (%s): to require it, %s", p.Cluster, p.Base, strings.Join(missing, "; "), how)
	} else {
		q.logf("pull request: the catalog branch %s requires the approval of the approvers of cluster %s (rule %q)", p.Base, p.Cluster, prot.Rule)
	}
	return missing, how, nil
}

// lastApproval reads the pull request of the cluster the forge merged
// last (its marker names the cluster) and who approved it; nil when there
// is none or the proposal names no approvers.
func (q *proposer) lastApproval(ctx context.Context) (*Approval, error) {
	rv, ok := q.f.(forge.Reviews)
	if len(q.p.Approvers) == 0 || !ok {
		return nil, nil
	}
	m, err := rv.LastMerged(ctx, q.p.Branch, q.p.Base)
	if err != nil || m == nil || ParseMarker(m.Body).Cluster != q.p.Cluster {
		return nil, err
	}
	as, err := rv.Approvals(ctx, m.Number)
	if err != nil {
		return nil, err
	}
	a := &Approval{Number: m.Number, URL: m.URL, Commit: m.Commit}
	if !m.MergedAt.IsZero() {
		a.MergedAt = m.MergedAt.UTC().Format("2006-01-02T15:04:05Z")
	}
	seen := map[string]bool{}
	for _, x := range as {
		if !seen[x.User] {
			seen[x.User] = true
			a.Approvers = append(a.Approvers, x.User)
		}
	}
	return a, nil
}
