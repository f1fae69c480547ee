package main

import (
	"strings"

	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/spf13/pflag"
)

// deliveryFlags are how `publish run` delivers each cluster's change
// (docs/clusters.md, "Pull requests"): --delivery, --pr-label,
// --auto-merge, --plan-dir, and the forge of the catalog repo: --forge,
// --forge-api-url, --forge-repo, --forge-token.
type deliveryFlags struct {
	delivery, autoMerge       string
	labels                    []string
	planDir                   string
	kind, apiURL, repo, token string
}

func (f *deliveryFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.delivery, "delivery", "", "how each cluster's change reaches --catalog-branch: push (a commit on it) or pull-request (a rolling branch publish/<cluster> and one pull request against it, for a reviewer to merge) (default: publish.yaml clusters.<cluster>.delivery, else push)")
	fs.StringSliceVar(&f.labels, "pr-label", nil, "label the pull requests (repeatable; added to publish.yaml clusters.<cluster>.pullRequest.labels)")
	fs.StringVar(&f.autoMerge, "auto-merge", "", "ask the forge to merge each pull request once its checks and reviews pass: merge, squash or rebase (default: publish.yaml clusters.<cluster>.pullRequest.autoMerge, else off)")
	fs.StringVar(&f.planDir, "plan-dir", "publish-plan", "write each pull request's full plan here (<cluster>.md and <cluster>.json) for the CI job to keep as its files; the pull request links to the job")
	f.registerForge(fs)
}

// registerForge registers the flags of the catalog repo's forge alone
// (--forge, --forge-api-url, --forge-repo, --forge-token): what a command
// that opens one pull request of its own needs.
func (f *deliveryFlags) registerForge(fs *pflag.FlagSet) {
	fs.StringVar(&f.kind, "forge", "", "forge of the catalog repo for pull requests: github, gitlab or gitea (Forgejo too) (default: detected from --catalog)")
	fs.StringVar(&f.apiURL, "forge-api-url", "", "API of a self-hosted forge: https://HOST/api/v3 (GitHub Enterprise Server), https://HOST/api/v4 (GitLab), https://HOST/api/v1 (Gitea) (default: from --catalog)")
	fs.StringVar(&f.repo, "forge-repo", "", "repository on the forge, owner/name (GitLab: group/subgroup/name) (default: from --catalog)")
	fs.StringVar(&f.token, "forge-token", "", "token of the forge's API that may push the rolling branch and open pull requests (GitHub: contents and pull-requests write; GitLab: api scope, Developer; Gitea: write:repository) (default: --catalog-password)")
	secret(fs, "forge-token")
}

// apply sets the delivery of every cluster of rs (the flags win over
// publish.yaml) and the forge of o. Errors are usage errors naming the
// flag or publish.yaml.
func (f *deliveryFlags) apply(cfg *config.Config, rs []renderSettings, o *pipeline.Options, cat gitops.Options) error {
	for i := range rs {
		cs := cfg.ClusterSettings(rs[i].Cluster)
		d, pr := cs.Delivery, pipeline.PullRequestOptions{Branch: cs.PullRequest.Branch, Labels: cs.PullRequest.Labels, AutoMerge: cs.PullRequest.AutoMerge}
		for _, a := range cs.PullRequest.Approvers {
			pr.Approvers = append(pr.Approvers, forge.Approvers{Users: a.Users, Teams: a.Teams, Artifacts: a.Artifacts})
		}
		if f.delivery != "" {
			d = f.delivery
		}
		if f.autoMerge != "" {
			pr.AutoMerge = f.autoMerge
		}
		for _, l := range f.labels {
			if l = strings.TrimSpace(l); l != "" {
				pr.Labels = append(pr.Labels, l)
			}
		}
		if err := pipeline.CheckDelivery(rs[i].Cluster, d, pr); err != nil {
			return &usageError{err}
		}
		rs[i].Delivery, rs[i].PullRequest = d, pr
	}
	o.Forge = f.forge(cat)
	o.PlanDir = f.planDir
	return nil
}

// forge returns how to open the forge of the catalog repo cat from the
// forge flags (the token defaults to --catalog-password).
func (f *deliveryFlags) forge(cat gitops.Options) func() (forge.Forge, error) {
	token := f.token
	if token == "" {
		token = cat.Password
	}
	fo := forge.Options{Kind: f.kind, APIURL: f.apiURL, Repo: f.repo, Token: token, CatalogURL: cat.URL, CABundle: cat.CABundle}
	if fo.Kind == "forgejo" {
		fo.Kind = "gitea"
	}
	return func() (forge.Forge, error) {
		if fo.Token == "" {
			return nil, usagef("a pull request needs a token of the forge's API: give --forge-token (or PUBLISH_FORGE_TOKEN; --catalog-password is used when it is an API token)")
		}
		return forge.New(fo)
	}
}
