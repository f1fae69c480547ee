package model

// ApprovalRecord is what publish/state/<cluster>.yaml records of a pull
// request of the cluster that the forge merged (delivery: pull-request
// with pullRequest.approvers, docs/pull-requests.md): which one, its merge
// commit, who approved it as the forge's review API reported it, and the
// bundle digests that merge listed on the cluster. The run after the
// merge writes it; it is never rendered.
type ApprovalRecord struct {
	// PullRequest is the pull request's number (GitLab: the IID), URL its
	// page.
	PullRequest int    `json:"pullRequest"`
	URL         string `json:"url,omitempty"`
	// Commit is the merge commit the forge wrote on the catalog branch.
	Commit string `json:"commit"`
	// MergedAt is when the forge merged it (RFC 3339, UTC; "" unknown).
	MergedAt string `json:"mergedAt,omitempty"`
	// Approvers are the logins whose approving review the forge reported.
	Approvers []string `json:"approvers"`
	// Digests are the versions the merged pull request listed on the
	// cluster (added, relisted or with a new bundle digest:
	// ChangedDigests of the cluster's state before and after the merge),
	// with their bundle digests.
	Digests []ApprovedDigest `json:"digests"`
}

// ApprovedDigest is one listed version of an ApprovalRecord.
type ApprovedDigest struct {
	Artifact     string `json:"artifact"`
	Version      string `json:"version"`
	BundleDigest string `json:"bundleDigest"`
}

// ChangedDigests returns the versions that after lists and before does
// not list with the same bundle digest (added, relisted, or rebuilt in
// place), with their bundle digests, in the order of after (SortRecords'
// order in a state file): the versions a change of the cluster's records,
// such as a merged pull request, listed. Delisted versions are not in it.
func ChangedDigests(before, after []ArtifactRecord) []ApprovedDigest {
	had := map[[2]string]string{}
	for _, a := range before {
		for _, v := range a.Versions {
			if a.Present && v.Present {
				had[[2]string{a.Name, v.Version}] = v.BundleDigest
			}
		}
	}
	out := []ApprovedDigest{}
	for _, a := range after {
		if !a.Present {
			continue
		}
		for _, v := range a.Versions {
			if d, ok := had[[2]string{a.Name, v.Version}]; v.Present && (!ok || d != v.BundleDigest) {
				out = append(out, ApprovedDigest{Artifact: a.Name, Version: v.Version, BundleDigest: v.BundleDigest})
			}
		}
	}
	return out
}
