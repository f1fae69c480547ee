package model

// ApprovalRecord is what publish/state/<cluster>.yaml records of a pull
// request of the cluster that the forge merged (delivery: pull-request
// with pullRequest.approvers, docs/pull-requests.md): which one, its merge
// commit, who approved it as the forge's review API reported it, and the
// bundle digests the cluster listed with that merge. The run after the
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
	// Digests are the versions the cluster listed with the merge, with
	// their bundle digests.
	Digests []ApprovedDigest `json:"digests"`
}

// ApprovedDigest is one listed version of an ApprovalRecord.
type ApprovedDigest struct {
	Artifact     string `json:"artifact"`
	Version      string `json:"version"`
	BundleDigest string `json:"bundleDigest"`
}

// ListedDigests returns the present versions of arts with their bundle
// digests, in the order of arts (SortRecords' order in a state file).
func ListedDigests(arts []ArtifactRecord) []ApprovedDigest {
	out := []ApprovedDigest{}
	for _, a := range arts {
		if !a.Present {
			continue
		}
		for _, v := range a.Versions {
			if v.Present {
				out = append(out, ApprovedDigest{Artifact: a.Name, Version: v.Version, BundleDigest: v.BundleDigest})
			}
		}
	}
	return out
}
