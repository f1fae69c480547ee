package main

import (
	"fmt"
	"github.com/operator-publish/publish/internal/report"
	"io"

	"github.com/operator-publish/publish/internal/delivery"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/shard"
	"github.com/operator-publish/publish/internal/sign"
	"github.com/spf13/cobra"
)

// publishFlags are the groups of the commands that render and commit the
// catalog from a package repo (run) or read it (plan: no commit group, no
// copy group).
type publishFlags struct {
	source  sourceFlags
	src     srcRegistryFlags
	dst     dstRegistryFlags
	tls     tlsFlags
	retry   retryFlags
	copy    *copyFlags   // run only
	catalog catalogFlags // --catalog
	commit  *commitFlags // run only
	render  renderFlags
	oci     *ociFlags       // run only
	sign    *signFlags      // run only
	deliver *deliveryFlags  // run only
	charts  *chartRepoFlags // run only
	// lintCache is --lint-cache (lintCacheUsage).
	lintCache string
	// clusters are the clusters options resolved (resolveClusters).
	clusters []renderSettings
}

// register adds every group; write is true for run (copy and commit
// groups, push access).
func (p *publishFlags) register(cmd *cobra.Command, write bool) {
	fs := cmd.Flags()
	verb := "read"
	if write {
		verb = "push"
	}
	p.source.register(fs)
	p.render.register(fs)
	p.render.registerClusters(fs)
	p.dst.register(fs, verb+" access")
	p.src.register(fs)
	p.tls.register(fs)
	p.retry.register(fs)
	p.catalog.register(fs, verb, "catalog Git repo: URL or local path")
	fs.StringVar(&p.lintCache, "lint-cache", "", lintCacheUsage)
	if write {
		p.copy, p.commit, p.oci, p.sign, p.deliver = &copyFlags{}, &commitFlags{}, &ociFlags{}, &signFlags{}, &deliveryFlags{}
		p.deliver.register(fs)
		p.charts = &chartRepoFlags{}
		p.charts.register(fs)
		p.copy.register(fs)
		p.commit.register(fs)
		p.oci.register(fs)
		p.sign.register(fs, "the OCI catalog (--oci) and the olm target's catalog image after they are pushed, each chart mirrored, a verification summary of each mirrored image publish.yaml verify checked, and with publish.yaml sign.images each mirrored image")
	}
}

// options checks the flags and fills the pipeline options run and plan
// share. Errors are usage errors (exit 2) naming the flag.
func (p *publishFlags) options(inv *invocation, o *pipeline.Options, allowEmpty bool) error {
	if err := p.catalog.require(); err != nil {
		return err
	}
	hint := ""
	if p.commit != nil {
		hint = "; if every operator was removed and delisting every artifact is what you want, pass --allow-empty"
	}
	if err := p.source.check(allowEmpty, hint); err != nil {
		return err
	}
	all, err := p.render.resolveClusters(inv.config)
	if err != nil {
		return err
	}
	if p.deliver != nil {
		cat, err := p.catalog.options(&p.tls)
		if err != nil {
			return err
		}
		if err := p.deliver.apply(inv.config, all, o, cat); err != nil {
			return err
		}
		o.JobURL = inv.jobURL()
	}
	rs := all[0]
	o.Source, o.PackagesDir = p.source.source, p.source.packagesDir
	o.Cluster, o.Target, o.TargetSettings, o.Render = rs.Cluster, rs.Target, rs.TargetSettings, rs.Render
	o.Lint, o.LintCache = inv.lintConfig(), p.lintCache
	if inv.config != nil {
		o.ChartValues, o.KubeVersion = inv.config.ValuesFile, inv.config.KubernetesVersion
	}
	if p.oci != nil {
		if o.OCI, err = p.oci.resolve(inv.config, rs.Cluster); err != nil {
			return err
		}
		o.NoOCI = p.oci.noOCI
		if o.NoOCI && p.oci.ref != "" {
			return usagef("--no-oci and --oci: give one of them")
		}
	}
	if len(all) > 1 || rs.Include != nil || rs.Exclude != nil || rs.DstRegistry != "" || rs.Delivery == pipeline.DeliveryPullRequest || len(rs.After) > 0 {
		o.Clusters = nil
		for _, c := range all {
			oci := ""
			if p.oci != nil {
				if oci, err = p.oci.resolve(inv.config, c.Cluster); err != nil {
					return err
				}
			}
			o.Clusters = append(o.Clusters, c.clusterOptions(oci))
		}
	}
	p.clusters = all
	if p.charts != nil {
		o.ChartRepoAuth = p.charts.auth
	}
	o.Declared = inv.config.ClusterNames()
	o.Verify = inv.imageVerifier()
	if p.sign != nil {
		s, err := p.sign.signer()
		if err != nil {
			return err
		}
		o.SignImages = inv.config != nil && inv.config.Sign.Images
		if s != nil {
			if o.OCI == "" && !rs.Caps.CatalogImage && o.Verify == nil && !o.SignImages && !hasCharts(o.Source, o.PackagesDir) {
				return usagef("--cosign-key signs the OCI catalog (and, for the olm target, the catalog image), the charts mirrored, and what publish.yaml verify and sign.images ask for: give --oci REGISTRY/REPOSITORY[:TAG] (or publish.yaml clusters.%s.oci)", rs.Cluster)
			}
			s.Version = versionString()
			o.Sign = s
		}
		if o.SignImages && s == nil {
			return usagef("publish.yaml sign.images: true signs each mirrored image with the site's key: give --cosign-key")
		}
	}
	reg := registryFlags{src: &p.src, dst: &p.dst, tls: &p.tls, retry: &p.retry, copy: p.copy}
	if err := reg.apply(&o.Mirror); err != nil {
		return err
	}
	if o.Catalog, err = p.catalog.options(&p.tls); err != nil {
		return err
	}
	if p.commit != nil {
		if o.CommitTemplate, err = p.commit.apply(&o.Catalog); err != nil {
			return err
		}
	}
	o.Log = inv.log
	return nil
}

func newRunCmd(inv *invocation) *cobra.Command {
	var (
		p          publishFlags
		o          pipeline.Options
		reportFile string
		shards     shardFlags
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Publish the package repo: mirror bundles and related images, render and push the catalog",
		Long: `run scans the PackageManifests of the package repo, reads every bundle image,
mirrors every related image and then every bundle to --dst-registry (digests
preserved, images already there skipped), renders Artifact and ArtifactVersion
objects through the cluster overlay of the catalog repo, and commits and pushes
the catalog when a byte changed. Versions and artifacts gone from the source
are delisted (present: false), never deleted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := p.dst.require(); err != nil {
				return err
			}
			if err := checkReportFlag(reportFile); err != nil {
				return err
			}
			if err := checkOutputFlag("--shard-result", shards.result); err != nil {
				return err
			}
			var err error
			if o.Shard, err = shards.get(); err != nil {
				return err
			}
			if err := p.options(inv, &o, o.AllowEmpty); err != nil {
				return err
			}
			return runAndReport(cmd, inv, o, reportFile, shards.result)
		},
	}
	p.register(cmd, true)
	p.src.registerMirrors(cmd.Flags())
	fs := cmd.Flags()
	shards.register(fs)
	fs.BoolVar(&o.AllowEmpty, "allow-empty", false, "allow a source without any manifest to delist every artifact")
	fs.BoolVar(&o.AllowDirty, "allow-dirty", false, "publish manifests that differ from the package repo's HEAD (uncommitted or staged) as they are on disk; the state records them, and the next run reads them again")
	fs.StringVar(&o.Base, "base", "", "compare against this source revision (default: the source commit of the last publish, from the catalog state, publish/state/)")
	fs.StringVar(&reportFile, "report", "", "also write what was copied, already present, failed and not tried, and why, as JSON to this file, whatever the outcome (docs/report.md)")
	fs.BoolVar(&o.NoFetch, "no-fetch", false, "never fetch from the package repo's origin to deepen a shallow clone")
	withEnvHelp(fs)
	return cmd
}

// runAndReport runs o (pipeline.Run), writes the image report to
// reportFile and, for a part of a split run, its result to shardResult
// ("": none), and prints what happened. It returns the run's error.
func runAndReport(cmd *cobra.Command, inv *invocation, o pipeline.Options, reportFile, shardResult string) error {
	res, err := pipeline.Run(cmd.Context(), o)
	var mr *mirror.Report
	var verified map[string]model.Verification
	if res != nil {
		mr, verified = res.Mirror, res.Verified
	}
	err = writeReport(reportFile, "run", mr, res, err)
	if shardResult != "" {
		var sr *pipeline.ShardRun
		if res != nil {
			sr = res.Shard
		}
		if sr == nil {
			sr = &pipeline.ShardRun{Part: o.Shard}
		}
		err = writeShardResult(shardResult, "run", sr.Part, mr, sr.Plan, sr.Items, verified, err)
		if s, ok := o.Sign.(*sign.ImageSigner); ok && s != nil && err == nil {
			if _, serr := signFile(s.Key, shardResultPath(shardResult, sr.Part)); serr != nil {
				err = fmt.Errorf("--shard-result: %w", serr)
			}
		}
	}
	if err != nil {
		// stdout says what happened only when it happened.
		return err
	}
	if res.Shard != nil {
		copied := 0
		if mr != nil {
			copied = mr.Copied()
		}
		fmt.Fprintf(cmd.OutOrStdout(), "shard     %s: %d images in %d repositories of the plan %s, %d copied; nothing committed: publish merge-shards commits\n", res.Shard.Part, len(res.Shard.Items), len(shard.Repositories(res.Shard.Items)), res.Shard.Plan.Digest, copied)
		return nil
	}
	printResult(cmd, res)
	inv.reportRun(res.Changes, res.Commit, res.Clusters)
	return nil
}

func printResult(cmd *cobra.Command, res *pipeline.Result) {
	w := cmd.OutOrStdout()
	if len(res.Clusters) > 1 {
		printClusters(cmd, res)
		return
	}
	for _, l := range report.ResultLines(res.Changes.List(), "") {
		fmt.Fprintln(w, l)
	}
	if o := res.OCI; o != nil {
		state := "present"
		if o.Pushed {
			state = "pushed"
		}
		fmt.Fprintf(w, "oci       %s@%s (%s)\n", o.Ref, o.Digest, state)
	}
	if len(res.Clusters) == 1 && res.Clusters[0].PullRequest != nil {
		printPullRequest(w, res.Clusters[0].PullRequest, "")
		return
	}
	if res.Commit != "" {
		fmt.Fprintf(w, "commit    %s\n", res.Commit)
	} else if res.Superseded != "" {
		fmt.Fprintf(w, "no change: the catalog is already published from a newer source commit, %s\n", res.Superseded)
	} else if res.Mirror != nil {
		fmt.Fprintln(w, "no change: nothing committed")
	}
}

// printClusters is printResult for a run of several clusters: each change
// with its cluster ("listed    tiny 1.2.0 (cluster a)"), then the commit.
func printClusters(cmd *cobra.Command, res *pipeline.Result) {
	w := cmd.OutOrStdout()
	for _, c := range res.Clusters {
		for _, l := range report.ResultLines(c.Changes.List(), " (cluster "+c.Name+")") {
			fmt.Fprintln(w, l)
		}
		if o := c.OCI; o != nil {
			state := "present"
			if o.Pushed {
				state = "pushed"
			}
			fmt.Fprintf(w, "oci       %s@%s (%s, cluster %s)\n", o.Ref, o.Digest, state, c.Name)
		}
		if c.Superseded != "" {
			fmt.Fprintf(w, "no change on cluster %s: it is already published from a newer source commit, %s\n", c.Name, c.Superseded)
		}
		printPullRequest(w, c.PullRequest, " (cluster "+c.Name+")")
	}
	if res.Commit != "" {
		fmt.Fprintf(w, "commit    %s\n", res.Commit)
	} else if res.Mirror != nil {
		fmt.Fprintln(w, "no change: nothing committed")
	}
}

// printPullRequest prints what the run did with a cluster's pull request
// ("pr        opened #12 https://... (cluster a)"), nothing when it had
// none to propose and none was open.
func printPullRequest(w io.Writer, pr *delivery.Result, suffix string) {
	if pr == nil || pr.Action == "" {
		return
	}
	fmt.Fprintf(w, "pr        %s #%d %s%s\n", pr.Action, pr.Number, pr.URL, suffix)
}

// hasCharts reports whether the package repo at source holds a chart
// manifest (spec.type chart), which --cosign-key signs at the destination
// without --oci. A repo that does not scan holds none here: the run
// reports it.
func hasCharts(source, packagesDir string) bool {
	ms, err := pipeline.Scan(source, packagesDir)
	if err != nil {
		return false
	}
	for _, m := range ms {
		if m.Spec.Type == manifest.TypeChart {
			return true
		}
	}
	return false
}
