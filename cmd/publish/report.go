package main

import (
	"encoding/json"
	"fmt"
	"github.com/operator-publish/publish/internal/report"
	"sort"
	"strconv"
	"strings"

	"github.com/operator-publish/publish/internal/ci"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/render"
)

// changedArtifacts lists the artifacts a change set touches, sorted, once:
// the artifacts output (model.ChangedArtifacts).
func changedArtifacts(ch render.Changes) []string {
	out := model.ChangedArtifacts(ch.List())
	if out == nil {
		out = []string{}
	}
	return out
}

// setOutputs records the CI outputs (GitHub step outputs, Tekton results,
// GitLab dotenv); a failure to write them is a warning, not a failed run.
func (inv *invocation) setOutputs(kv map[string]string) {
	if inv.ci == nil {
		return
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := inv.ci.SetOutput(k, kv[k]); err != nil {
			inv.warnf("CI output %s: %v", k, err)
		}
	}
}

// runSummary is the Markdown job summary of a run.
func runSummary(ch render.Changes, commit string) string {
	var b strings.Builder
	b.WriteString("## publish run\n\n")
	if ch.Empty() && commit == "" {
		b.WriteString("Nothing changed: no catalog commit.\n")
		return b.String()
	}
	for _, l := range report.SummaryLines(ch.List()) {
		b.WriteString(l + "\n")
	}
	if commit != "" {
		fmt.Fprintf(&b, "\nCatalog commit `%s`.\n", commit)
	}
	return b.String()
}

// clusterOutput is one entry of the clusters output (ci.OutputClusters):
// the cluster, its delivery, the commit the run made for it (on the
// catalog branch for push, on the rolling branch for pull-request; ""
// when none), whether that changed the catalog branch, and its pull
// request (URL, number as text, what the run did, the branch).
type clusterOutput struct {
	Cluster  string `json:"cluster"`
	Delivery string `json:"delivery"`
	Commit   string `json:"commit"`
	Changed  bool   `json:"changed"`
	PR       string `json:"pr"`
	PRNumber string `json:"prNumber"`
	PRAction string `json:"prAction,omitempty"`
	Branch   string `json:"branch,omitempty"`
}

// clustersOutput is the clusters output of a run: a JSON array.
func clustersOutput(cs []pipeline.ClusterResult) string {
	out := make([]clusterOutput, 0, len(cs))
	for _, c := range cs {
		o := clusterOutput{Cluster: c.Name, Delivery: c.Delivery, Commit: c.Commit, Changed: c.Commit != ""}
		if o.Delivery == "" {
			o.Delivery = pipeline.DeliveryPush
		}
		if pr := c.PullRequest; pr != nil {
			o.Commit, o.Branch, o.PRAction, o.PR = pr.Commit, pr.Branch, pr.Action, pr.URL
			if pr.Number > 0 {
				o.PRNumber = strconv.Itoa(pr.Number)
			}
		}
		out = append(out, o)
	}
	data, _ := json.Marshal(out)
	return string(data)
}

// reportRun records the outputs and the job summary of a run (or push
// --catalog): cs is what it did per cluster.
func (inv *invocation) reportRun(ch render.Changes, commit string, cs []pipeline.ClusterResult) {
	changed := "false"
	if commit != "" {
		changed = "true"
	}
	inv.setOutputs(map[string]string{
		ci.OutputChanged:   changed,
		ci.OutputArtifacts: strings.Join(changedArtifacts(ch), "\n"),
		ci.OutputCommit:    commit,
		ci.OutputClusters:  clustersOutput(cs),
	})
	if inv.ci != nil {
		if err := inv.ci.Summary(runSummaryClusters(ch, commit, cs)); err != nil {
			inv.warnf("CI summary: %v", err)
		}
	}
}

// runSummaryClusters is runSummary, with one section per cluster when the
// run served several.
func runSummaryClusters(ch render.Changes, commit string, cs []pipeline.ClusterResult) string {
	if len(cs) == 0 || len(cs) == 1 && cs[0].PullRequest == nil {
		return runSummary(ch, commit)
	}
	var b strings.Builder
	b.WriteString("## publish run\n\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "### Cluster %s\n\n", c.Name)
		switch {
		case c.Superseded != "":
			fmt.Fprintf(&b, "Already published from a newer source commit, `%s`.\n\n", c.Superseded)
		case c.PullRequest != nil && c.PullRequest.Action != "":
			pr := c.PullRequest
			fmt.Fprintf(&b, "Pull request [#%d](%s) %s (branch `%s`).\n\n", pr.Number, pr.URL, pr.Action, pr.Branch)
			if !c.Changes.Empty() && pr.Action != "closed" {
				b.WriteString(strings.TrimPrefix(runSummary(c.Changes, ""), "## publish run\n\n") + "\n")
			}
		case c.Changes.Empty() && c.Commit == "":
			b.WriteString("Nothing changed.\n\n")
		default:
			sub := strings.TrimPrefix(runSummary(c.Changes, ""), "## publish run\n\n")
			b.WriteString(sub + "\n")
		}
	}
	if commit != "" {
		fmt.Fprintf(&b, "Catalog commit `%s`.\n", commit)
	} else {
		b.WriteString("No catalog commit.\n")
	}
	return b.String()
}
