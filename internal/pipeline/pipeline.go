// Package pipeline wires the stages of the publish commands
// (docs/design.md#pipeline): scan, select the changed versions, read their
// bundles, lint, mirror, render through the cluster's target
// (internal/target), commit and push. Stages pass model.Version values
// (internal/model); the run-time state of one run lives in a run value,
// never in Options.
//
// Run is `publish run`, PlanRun `publish plan` (plan.go), both through one
// engine (engine.go: the incremental or the full read of the package repo
// and the catalog branch tip, the render, the commit), Render `publish render`,
// Mirror `publish mirror`, Lint `publish lint`, Package and Push the
// air-gapped transfer (archive.go).
package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/chartmuseum"
	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/ocicatalog"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/shard"
	"github.com/operator-publish/publish/internal/source/diff"
	"github.com/operator-publish/publish/internal/target"
)

// InputError is a problem the user must fix in the package repo, the
// catalog's overlays or the flags (exit code 1); model.InputError.
type InputError = model.InputError

func inputErr(err error) error { return model.Input(err) }

// Options configures a run. Paths are local paths.
type Options struct {
	Source      string // package repo checkout (default ".")
	PackagesDir string // relative to Source (default "packages")
	Cluster     string // overlay name (default "global")
	Render      render.Config
	Mirror      mirror.Options
	Catalog     gitops.Options
	// Changed reports whether a version changed since the last publish
	// (internal/diff). Only changed versions, and versions the state has no
	// record of, are read and mirrored; the rest keep what publish/state.yaml
	// recorded. Nil: every version counts as changed.
	Changed func(artifact, version string) bool
	// Shard, when set, makes the run one part of a split (--shard I/N):
	// it reads, lints and verifies as a whole run does, copies only the
	// destination repositories of its part (shard.Plan.Assign) and never
	// commits; Result.Shard says what it did.
	Shard shard.Shard
	// Shards, when set, makes the run the merge of a split (publish
	// merge-shards): the images the parts' results (CheckShardResults)
	// name are checked at the destination instead of copied, and the run
	// renders and commits as a whole run does.
	Shards map[string][]mirror.Result
	// ShardProblems, with Shards, make the merge fail whatever the images
	// (CheckShardResults' *ShardsError when Incomplete: parts without a
	// result), after it named the images no result has.
	ShardProblems []string
	// Lint configures the lint rules (publish.yaml).
	Lint lint.Config
	// LintCache is the lint cache directory (--lint-cache, kind.LintCache),
	// "" for none.
	LintCache string
	// ChartValues returns the path in the package repo (below Source) of
	// the values file of a chart artifact on a cluster (publish.yaml
	// clusters.<cluster>.values.<artifact>: config.ValuesFile), "" for
	// none; nil: none anywhere.
	ChartValues func(cluster, artifact string) string
	// ChartRepoAuth authenticates the uploads and deletions of the
	// ChartMuseum way (render.Config.ChartRepo: --chart-repo-username,
	// --chart-repo-password, --chart-repo-token); sent to the chartRepo
	// URL's host only.
	ChartRepoAuth chartmuseum.Auth
	// KubeVersion returns the Kubernetes version of a cluster (publish.yaml
	// clusters.<cluster>.kubernetesVersion: config.KubernetesVersion), ""
	// for none; nil: none anywhere. Charts are rendered for it and their
	// kubeVersion checked against it (kind.Env.KubeVersion).
	KubeVersion func(cluster string) string
	// Verify checks the signatures of every bundle and related image read
	// before anything is mirrored (publish.yaml verify; internal/verify);
	// nil: nothing is verified.
	Verify ImageVerifier
	// Sign, when set, signs the OCI catalog artifact after it is pushed
	// (--cosign-key; docs/signatures.md), and when the tag already pointed
	// at it, if the digest has no Sigstore bundle referrer yet.
	Sign ImageSigner
	// SignImages (publish.yaml sign.images) signs, with Sign, each digest
	// the run mirrored (an image, an image index and each platform
	// child) at the destination, unless it has a signature by Sign's key
	// (attestMirrored). With Sign and a verify policy, each mirrored
	// digest the policy verified also gets a verification summary.
	SignImages bool
	// AllowEmpty lets a source without any manifest delist every artifact.
	AllowEmpty bool
	// AllowDirty lets run publish manifests whose content on disk is not
	// the package repo's HEAD (--allow-dirty); without it such a run stops
	// with a *DirtyError before anything is read or written. The state
	// records their paths (gitops.Source.Dirty), and the next run reads
	// them again.
	AllowDirty bool
	// Base is an explicit base revision for change detection (--base);
	// default: the source commit recorded in publish/state.yaml.
	Base string
	// NoFetch forbids change detection to deepen a shallow clone or fetch a
	// missing base from the package repo's origin.
	NoFetch bool
	// CommitTemplate, when set, writes the catalog commit message
	// (ParseCommitTemplate; CommitData); nil: CommitMessage.
	CommitTemplate *template.Template
	// Log receives progress lines ("<stage>: ...") at level Info and
	// warnings at level Warn; nil discards them.
	Log *slog.Logger
	// Target names what the cluster runs (internal/target: "alauda", the
	// default, or "olm"); TargetSettings are the target's own settings
	// (target.Settings.Own: config.TargetSettings of the cluster's block
	// of publish.yaml, or a value of the target's type; nil: its
	// defaults).
	Target         string
	TargetSettings any
	// OCI, when set, is the OCI catalog reference of the cluster
	// (REGISTRY/REPOSITORY[:TAG], default tag the cluster; --oci, or
	// publish.yaml clusters.<cluster>.oci): rendered/<cluster> of the new
	// catalog is pushed there as a single-layer OCI artifact
	// (internal/ocicatalog) before the catalog commit, and its digest
	// recorded in publish/state.yaml.
	OCI string
	// NoOCI stops pushing the OCI catalog of a cluster whose state records
	// one (--no-oci); without it, a cluster with no OCI reference given
	// keeps pushing to the reference its state records (ociRecorded).
	NoOCI bool
	// SourceCommitOverride and SourceRepoOverride, when set, are recorded as
	// the source of the publish instead of Source's Git HEAD and origin
	// (push --catalog: the commit the archive was packaged from).
	SourceCommitOverride, SourceRepoOverride string
	// Clusters, when set, are the clusters the run serves, each with its
	// settings (publish run with no --cluster: every cluster of
	// publish.yaml); Cluster, Target, TargetSettings, OCI and Render are
	// then not used. Empty: the one cluster those fields describe.
	// `publish run` makes one commit for all of them.
	Clusters []ClusterOptions
	// Declared are the clusters publish.yaml declares (nil: none, or no
	// publish.yaml): a rendered/<cluster> of another cluster is kept as it
	// is, with a warning (removing it would make Argo CD or Flux prune its
	// objects).
	Declared []string
	// Forge opens the forge of the catalog repo (internal/forge), for the
	// clusters whose delivery is DeliveryPullRequest; nil: none can be.
	Forge func() (forge.Forge, error)
	// PlanDir, when set, is where a pull-request cluster's full plan is
	// written (<cluster>.md and .json) for the CI job to keep as its
	// files (--plan-dir); JobURL, when set, is the CI job's page, linked
	// from the pull request's body.
	PlanDir, JobURL string
	// Now is the run's clock (nil: time.Now), which the olm target
	// measures deprecation periods by (target.Settings.Now).
	Now func() time.Time
	// fullRead makes the engine read the whole package repo and catalog
	// even where the incremental way applies: the equivalence tests.
	fullRead bool
	// cluster is the cluster of a run of several (forCluster), and
	// runClusters the names of all of them.
	cluster     ClusterOptions
	runClusters []string
	// src is the package repo, opened once (sourceRepo).
	src *sourceOnce
}

// run is the run-time state of one Run or PlanRun, apart from the Options
// that configure it (which it never rewrites): the registry client, what
// change detection found, and what the target prepared.
type run struct {
	Options
	mc *mirror.Client
	// changed is Options.Changed, or change detection's answer; nil: every
	// version counts as changed.
	changed func(artifact, version string) bool
	diff    *diff.Result
	// dirty names the versions ("artifact", "version") whose manifests
	// differ from the package repo's HEAD: published as they are on disk.
	dirty [][2]string
	// uncommitted holds the manifest paths whose content on disk is not
	// HEAD's (scope.dirty); dirtyPaths those of them the run publishes.
	uncommitted map[string]bool
	dirtyPaths  []string
	// target renders rendered/<cluster>; it keeps what it prepared.
	target target.Target
	// dstOpts, when set, are the remote options for the destination
	// registry instead of mc's (push --no-auth).
	dstOpts []remote.Option
}

// now is the run's time: Options.Now, else time.Now. The catalog commit
// of a run is dated by it, so that an injected clock dates both the
// catalog history and what the olm target judges by it.
func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// newClient builds the registry client of a run: the source credentials go
// to the registries the manifests name, unless o.SrcHosts says otherwise.
func newClient(o mirror.Options, ms []*manifest.PackageManifest) (*mirror.Client, error) {
	if o.SrcHosts == nil {
		o.SrcHosts = sourceHosts(ms)
	}
	mc, err := mirror.New(o)
	if err != nil {
		return nil, inputErr(err)
	}
	return mc, nil
}

// Result is what a run did.
type Result struct {
	SourceCommit string
	// Shard is the part's plan and items in a part of a split run, nil
	// otherwise.
	Shard *ShardRun
	// Manifests counts the package manifests read: every one on the full
	// way, those of the artifacts the change touches on the incremental
	// way (docs/design.md, "The engine").
	Manifests   int
	BundlesRead int // bundles read and mirrored: the changed versions
	Findings    []lint.Finding
	Diff        *diff.Result
	Mirror      *mirror.Report
	Changes     render.Changes
	Commit      string // catalog commit, "" when nothing changed
	Files       []string
	// Unpublished names the versions ("artifact version") of the package
	// repo that push --catalog left out: never published, and their images
	// are not in the archive.
	Unpublished []string
	// Superseded is the source commit of a catalog that was already
	// published from a newer commit than ours: nothing was committed.
	Superseded string
	// OCI is what the push of the OCI catalog did (nil without
	// Options.OCI): the tag, its digest, and whether anything was written.
	OCI *ocicatalog.Result
	// Verified holds the signature verification of every bundle and
	// related image read, by image reference (nil without a policy).
	Verified map[string]model.Verification
	// Signatures sorts the images of Verified per artifact into signed,
	// unsigned and failed, as the plan and the log count them (nil
	// without a policy).
	Signatures map[string]*model.SignatureCounts
	// Clusters is what the run did on each cluster, in the order served.
	// With one cluster the fields above are that cluster's; with several,
	// Changes merges every cluster's and Commit is the one commit.
	Clusters []ClusterResult
}

func (o *Options) defaults() {
	if o.Source == "" {
		o.Source = "."
	}
	if o.src == nil {
		o.src = &sourceOnce{}
	}
	if o.PackagesDir == "" {
		o.PackagesDir = "packages"
	}
	if o.Cluster == "" {
		o.Cluster = "global"
	}
	if o.Catalog.Branch == "" {
		o.Catalog.Branch = "main"
	}
}

// packagesRoot is --packages-dir resolved against --source.
func packagesRoot(source, packagesDir string) string {
	if filepath.IsAbs(packagesDir) {
		return packagesDir
	}
	return filepath.Join(source, packagesDir)
}

// Scan reads and checks the package repo: every PackageManifest parses, and
// the repo-wide rules hold (one version once per artifact, one tag once,
// one bundle repository per artifact). Errors are *InputError.
func Scan(source, packagesDir string) ([]*manifest.PackageManifest, error) {
	root := packagesRoot(source, packagesDir)
	ms, err := manifest.Scan(source, root)
	if err != nil {
		return nil, inputErr(err)
	}
	return ms, inputErr(lint.Errors(lint.Repo(ms)))
}

// Run is `publish run`: the whole pipeline, through the engine that
// `publish plan` uses (openScope: only the artifacts a change touches are
// read and rendered when that applies), for every cluster of the run
// (Options.Clusters, else Options.Cluster), in one commit. Nothing is
// committed unless every image of every cluster was mirrored and every
// cluster rendered; no bundle is mirrored unless every related image was.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.defaults()
	if o.Mirror.Logger == nil {
		o.Mirror.Logger = o.Log // retries, requests that wait
	}
	return runClusters(ctx, o)
}

// prepareCluster reads, lints and verifies what one cluster of a run
// needs (o is forCluster's), on the catalog tip shared by the run's
// clusters: every cluster of a run goes through it before any image is
// mirrored (mirrorCluster), so that a lint error of one cluster stops the
// run with nothing mirrored. The clusterRun is returned with its result
// also when an error stops it.
func prepareCluster(ctx context.Context, o Options, tgt target.Target, tip *catalog.Tip, sh *shared) (*clusterRun, error) {
	res := &Result{}
	s, err := openScopeOn(ctx, o, scopeOptions{}, tgt, tip)
	if err != nil {
		return nil, err
	}
	cr := &clusterRun{s: s, res: res, cres: &ClusterResult{Name: o.Cluster}}
	vs, state := s.vs, s.state
	res.Manifests = len(vs)
	o.logf("%s", s.way.scanned(o, len(vs)))
	if repo, err := o.sourceRepo(); err == nil {
		res.SourceCommit = repo.Head()
	}

	o.OCI = ociRecorded(o, state)
	r := &run{Options: o, changed: o.Changed, target: tgt, mc: s.mc}
	cr.r = r
	if len(vs) == 0 && !o.AllowEmpty && s.coversAll() {
		if n := presentArtifacts(state.Artifacts); n > 0 {
			return cr, inputErr(fmt.Errorf("no PackageManifest found under %s, but the catalog lists %d artifacts: publishing would delist all of them. Check --source and --packages-dir; if delisting everything is what you want, pass --allow-empty", filepath.Join(o.Source, o.PackagesDir), n))
		}
	}
	pr, err := s.prepare(ctx, r, prepareMode{read: sh.readVersions})
	if err != nil {
		return cr, err
	}
	res.Diff = r.diff
	vs, changed := pr.vs, pr.changed
	res.Findings, res.Verified = pr.findings, pr.verified
	if pr.verified != nil {
		res.Signatures = artifactSignatures(pr.changed, pr.verified)
		for _, l := range verifySummary(pr.changed, pr.verified) {
			o.logf("%s", l)
		}
	}
	if hasErrors(res.Findings) {
		return cr, &InputError{Err: &LintError{Findings: res.Findings}}
	}
	for _, f := range res.Findings {
		o.logf("lint: %s", f)
	}
	res.BundlesRead = len(changed)
	if res.BundlesRead == len(vs) {
		o.logf("bundles: %d read", len(vs))
	} else {
		o.logf("bundles: %d of %d read (the others are unchanged since the last publish)", res.BundlesRead, len(vs))
	}
	cr.vs, cr.p = vs, pr
	return cr, nil
}

// ociRecorded returns the OCI catalog reference a cluster of a run pushes
// to: Options.OCI when given; else, unless --no-oci, the reference the
// cluster's state records, so that a run without --oci after runs with it
// does not silently leave Flux or Argo CD on the last artifact. Both cases
// of a recorded reference without --oci are said in the log.
func ociRecorded(o Options, state *gitops.State) string {
	rec, had := state.OCI[o.Cluster]
	switch {
	case o.OCI != "" || !had:
		return o.OCI
	case o.NoOCI:
		o.warnf("catalog: cluster %s: the OCI catalog at %s is no longer pushed (--no-oci): its record leaves the state, and whatever pulls it keeps the last artifact", o.Cluster, rec.Ref)
		return ""
	}
	o.logf("catalog: cluster %s: pushing the OCI catalog to %s, as the state records (--oci to change it, --no-oci to stop)", o.Cluster, rec.Ref)
	return rec.Ref
}

// mirrorCluster is the second half of a cluster of a run, after every
// cluster of the run was read, linted and verified (prepareCluster): the
// target prepares (the images it needs itself), the images are mirrored
// (once per destination over the run, sh), and the records of the
// cluster's versions are made from what reached the destination.
func mirrorCluster(ctx context.Context, cr *clusterRun, sh *shared) error {
	r, s, res, vs := cr.r, cr.s, cr.res, cr.vs
	o, state := r.Options, s.state
	if !cr.targeted {
		if err := targetCluster(ctx, cr, sh); err != nil {
			return err
		}
	}
	// A version its gates hold back is not mirrored to the cluster's
	// destination yet (the records made without digests say which).
	if held := heldKeys(cr.p.waits); len(held) > 0 {
		var mvs []*model.Version
		for _, v := range vs {
			if !held[v.Key()] {
				mvs = append(mvs, v)
			}
		}
		vs = mvs
	}
	rep, err := sh.mirror(ctx, r.mc, o.Mirror.DstRegistry, vs, cr.extra)
	res.Mirror = rep
	if err != nil {
		return err
	}
	o.logf("mirror: %d images, %d copied, %d already at %s", len(rep.Images), rep.Copied(), len(rep.Images)-rep.Copied(), o.Mirror.DstRegistry)
	opts := r.dstOpts
	if opts == nil {
		opts = r.mc.DstOptions()
	}
	if err := attestMirrored(ctx, o, r.mc, opts, rep, cr.p.verified); err != nil {
		return err
	}
	if err := signCharts(ctx, o, r.mc, opts, mirroredCharts(vs, rep)); err != nil {
		return err
	}

	// The records again, with the digests of what reached the
	// destination.
	if err := cr.p.record(clientMapper{r.mc}, rep, state.Artifacts); err != nil {
		return err
	}
	cr.current = cr.p.current
	cr.cres.Waiting = cr.p.waits
	for _, l := range waitLines(cr.p.waits) {
		o.logf("%s", l)
	}
	return nil
}

// targetCluster lets the cluster's target prepare (tgt.Prepare: the
// images it needs itself, which it reads through the run's cache) and
// keeps those images for the mirror (clusterRun.extra).
func targetCluster(ctx context.Context, cr *clusterRun, sh *shared) error {
	r, o, tgt := cr.r, cr.r.Options, cr.r.target
	env := target.Env{Client: r.mc, Read: func(ctx context.Context, vs []*model.Version) error {
		return sh.readVersions(ctx, o.kindEnv(r.mc), vs)
	}}
	if err := tgt.Prepare(ctx, env, cr.vs, cr.s.targetState()); err != nil {
		return err
	}
	cr.extra = nil
	for _, ref := range tgt.Images() {
		cr.extra = append(cr.extra, mirror.Target{Ref: ref})
	}
	cr.targeted = true
	return nil
}

// UnmappedRegistry is the registry of a new artifact when no destination
// registry was given (`publish plan` without --dst-registry): a name that
// cannot resolve (RFC 6761). Known artifacts keep their recorded registry.
const UnmappedRegistry = "unmapped.invalid"

// pushAttempts bounds how often a rejected push is tried in all.
const pushAttempts = 6

// retryDelay is the wait before attempt n+1 (n >= 1): exponential backoff
// from 250 ms, capped at 4 s, with full jitter so that two runs that
// collided do not collide again in lockstep.
func retryDelay(n int) time.Duration {
	base := 250 * time.Millisecond << min(n-1, 4)
	return base/2 + time.Duration(rand.Int64N(int64(base)))
}

// publishWithRetry publishes one cluster (publishClusters): push
// --catalog, whose scope has its own tip.
func publishWithRetry(ctx context.Context, r *run, s *scope, current []model.ArtifactRecord, res *Result) error {
	cr := &clusterRun{r: r, s: s, current: current, res: res, cres: &ClusterResult{Name: r.Cluster}}
	all := &Result{}
	err := publishClusters(ctx, r.Options, nil, []*clusterRun{cr}, all)
	res.Clusters = []ClusterResult{*cr.cres}
	return err
}

// CommitMessage is the catalog commit message: a subject counting the
// changes (report.ChangeSubject), one section per kind of change (report.ChangeSections),
// and Source-Commit / Source-Repo trailers.
func CommitMessage(ch render.Changes, sourceCommit, sourceRepo string) string {
	cs := ch.List()
	var b strings.Builder
	b.WriteString(report.ChangeSubject(cs) + "\n")
	b.WriteString(report.ChangeSections(cs))
	if sourceCommit != "" || sourceRepo != "" {
		b.WriteString("\n")
		if sourceCommit != "" {
			b.WriteString("Source-Commit: " + sourceCommit + "\n")
		}
		if sourceRepo != "" {
			b.WriteString("Source-Repo: " + sourceRepo + "\n")
		}
	}
	return b.String()
}
