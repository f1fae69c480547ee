package pipeline

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/delivery"
	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/ocicatalog"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/rollout"
	"github.com/operator-publish/publish/internal/target"
)

// ClusterOptions are the settings of one cluster a run serves
// (publish.yaml clusters.<name>, with the flags as defaults; see
// docs/clusters.md).
type ClusterOptions struct {
	// Name is the cluster: its overlay kustomize/clusters/<name>, its
	// rendered/<name>, its generated base publish/generated/<name> and
	// its state file publish/state/<name>.yaml.
	Name string
	// Target, TargetSettings, OCI and Render are as Options' fields of
	// the same names, for this cluster.
	Target         string
	TargetSettings any
	OCI            string
	Render         render.Config
	// DstRegistry, when set, is the cluster's destination registry
	// (HOST[:PORT][/PREFIX]) instead of Options.Mirror.DstRegistry. Images
	// are mirrored once per distinct destination in a run.
	DstRegistry string
	// Include and Exclude select the artifacts the cluster gets, by name
	// (path.Match patterns, such as "cert-*"): those Include matches (every
	// artifact when it is empty) that Exclude does not. An artifact that
	// leaves the selection is delisted on this cluster only (present:
	// false), never deleted.
	Include, Exclude []string
	// Delivery is how the cluster's change reaches the catalog branch:
	// DeliveryPush ("" too) or DeliveryPullRequest, with PullRequest's
	// settings (docs/clusters.md).
	Delivery    string
	PullRequest PullRequestOptions
	// After are the cluster's gates (publish.yaml clusters.<name>.after):
	// a version lists here only once every upstream cluster has listed it,
	// with the same bundle digest, for the gate's soak time, as the catalog
	// history dates it (docs/rollout.md).
	After []rollout.Gate
}

// selects reports whether the cluster's selection takes artifact.
func (c ClusterOptions) selects(artifact string) bool {
	match := func(ps []string) bool {
		for _, p := range ps {
			if ok, _ := path.Match(p, artifact); ok {
				return true
			}
		}
		return false
	}
	return (len(c.Include) == 0 || match(c.Include)) && !match(c.Exclude)
}

// selection returns a canonical text of the selection ("" for every
// artifact), which is part of the render key the cluster's state records:
// a changed selection renders the cluster whole.
func (c ClusterOptions) selection() string {
	if len(c.Include) == 0 && len(c.Exclude) == 0 {
		return ""
	}
	return "include=" + strings.Join(c.Include, ",") + ";exclude=" + strings.Join(c.Exclude, ",")
}

// checkPatterns returns an error naming publish.yaml for a pattern that
// path.Match refuses.
func (c ClusterOptions) checkPatterns() error {
	for field, ps := range map[string][]string{"include": c.Include, "exclude": c.Exclude} {
		for _, p := range ps {
			if _, err := path.Match(p, ""); err != nil {
				return inputErr(fmt.Errorf("publish.yaml clusters.%s.%s: pattern %q: %v", c.Name, field, p, err))
			}
		}
	}
	return nil
}

// clusterList returns the clusters of the run: Options.Clusters, or the
// one cluster that Cluster, Target, TargetSettings, OCI and Render
// describe.
func (o *Options) clusterList() []ClusterOptions {
	if len(o.Clusters) > 0 {
		return o.Clusters
	}
	return []ClusterOptions{{Name: o.Cluster, Target: o.Target, TargetSettings: o.TargetSettings, OCI: o.OCI, Render: o.Render}}
}

// forCluster returns the options of one cluster of the run.
func (o Options) forCluster(c ClusterOptions) Options {
	o.Cluster, o.Target, o.TargetSettings, o.OCI, o.Render = c.Name, c.Target, c.TargetSettings, c.OCI, c.Render
	if c.DstRegistry != "" {
		// The flags' credentials belong to --dst-registry's host: a
		// cluster's own destination host takes the docker config's only
		// (publish.yaml, which a pull request can change, cannot send
		// them elsewhere).
		if registryHost(c.DstRegistry) != registryHost(o.Mirror.DstRegistry) {
			o.Mirror.Dst = mirror.Credentials{}
		}
		o.Mirror.DstRegistry = c.DstRegistry
	}
	o.runClusters = nil
	for _, rc := range o.Clusters {
		if k, err := target.Lookup(rc.Target); err == nil && k.Caps.Overlay {
			o.runClusters = append(o.runClusters, rc.Name)
		}
	}
	o.Clusters = nil
	o.cluster = c
	return o
}

// renderKey is the key recorded for the cluster: the target's key, with
// the artifact selection when there is one.
func (o *Options) renderKey(key string) string {
	if sel := o.cluster.selection(); sel != "" && key != "" {
		return key + " select " + sel
	}
	return key
}

// targetKey is the target's part of a recorded key (renderKey).
func targetKey(recorded string) string {
	k, _, _ := strings.Cut(recorded, " select ")
	return k
}

// ClusterResult is what a run did on one cluster.
type ClusterResult struct {
	Name    string
	Changes render.Changes
	// Commit is the run's catalog commit when it changed this cluster, ""
	// when it did not.
	Commit string
	// Superseded is the source commit of a cluster already published from
	// a newer commit than ours: nothing was done for it.
	Superseded string
	OCI        *ocicatalog.Result
	// Delivery is the cluster's (DeliveryPush or DeliveryPullRequest);
	// PullRequest what the run did with its pull request (nil for push).
	Delivery    string
	PullRequest *delivery.Result
	// Waiting are the versions the cluster's gates hold back
	// (ClusterOptions.After), by artifact and version.
	Waiting []rollout.Wait
}

// shared is what the clusters of one run share: the artifacts read (by
// kind and key: a bundle by reference) and the images mirrored (by
// destination registry and target), so that a bundle is read once and an
// image mirrored once per distinct destination.
type shared struct {
	mu       sync.Mutex
	read     *kind.Cache
	mirrored map[string]map[mirror.Target]mirror.Result
	// part, in a part of a split run (--shard), holds the destination
	// repositories this part copies; nil copies every one.
	part map[string]bool
	// shards, in a merge of a split run, are the results of its parts by
	// source reference: nothing is copied, each image is checked at the
	// destination (mergedMirror).
	shards map[string][]mirror.Result
	// shardProblems are why the merge cannot commit whatever the images
	// (parts without a result): said before the images no result has.
	shardProblems []string
}

func newShared() *shared {
	return &shared{read: kind.NewCache(), mirrored: map[string]map[mirror.Target]mirror.Result{}}
}

// readVersions reads the artifacts of vs that no other cluster of the run
// read already (readVersions, through the run's kind.Cache); the others
// get what was read.
func (sh *shared) readVersions(ctx context.Context, env kind.Env, vs []*model.Version) error {
	return sh.read.Read(ctx, env, vs)
}

// mirror mirrors what mirrorVersions would, leaving out the targets
// another cluster of the run mirrored to the same destination; their
// results are in the report all the same.
func (sh *shared) mirror(ctx context.Context, mc *mirror.Client, dst string, vs []*model.Version, extra []mirror.Target) (*mirror.Report, error) {
	done := sh.mirrored[dst]
	if done == nil {
		done = map[mirror.Target]mirror.Result{}
		sh.mirrored[dst] = done
	}
	related, bundles := mirrorTargets(vs, extra)
	if sh.shards != nil {
		rep, err := sh.mergedMirror(ctx, mc, related, bundles)
		if err == nil { // a classic repository's chart is no part's: pushed here (a HEAD when a part did)
			err = mirrorRepoCharts(ctx, mc, vs, rep)
		}
		return rep, err
	}
	if sh.part != nil {
		related, bundles = sh.inPart(mc, related), sh.inPart(mc, bundles)
	}
	var again []mirror.Result
	keep := func(ts []mirror.Target) []mirror.Target {
		var out []mirror.Target
		for _, t := range ts {
			if r, ok := done[t]; ok {
				again = append(again, r)
				continue
			}
			out = append(out, t)
		}
		return out
	}
	related, bundles = keep(related), keep(bundles)
	rep := &mirror.Report{}
	if len(related)+len(bundles) > 0 || hasRepoChart(vs) {
		var err error
		rep, err = mirrorTargetList(ctx, mc, vs, related, bundles)
		if err != nil {
			return rep, err
		}
		// The report holds one result per image (by its source
		// reference; a bundle's destination ends in its tag).
		for _, t := range append(append([]mirror.Target(nil), related...), bundles...) {
			for _, r := range rep.Images {
				if r.Source == t.Ref && (t.Tag == "" || strings.HasSuffix(r.Destination, ":"+t.Tag)) {
					done[t] = r
					break
				}
			}
		}
	}
	rep.Images = append(rep.Images, again...)
	return rep, nil
}

// clusterRun is one cluster of a run, read, linted and mirrored: its
// options, its scope of the catalog tip, the artifacts of the package repo
// it gets, and what it did.
type clusterRun struct {
	r       *run
	s       *scope
	current []model.ArtifactRecord
	res     *Result
	cres    *ClusterResult
	// vs are the versions of the package repo the cluster gets, p what
	// prepare gave for them.
	vs []*model.Version
	p  *prepared
	// extra are the images the target needs itself (targetCluster, once
	// targeted).
	extra    []mirror.Target
	targeted bool
	// skip: the cluster was published from a newer source commit.
	skip bool
}

// pathOwner returns the cluster a catalog path belongs to: its state
// file, or a file below rendered/<cluster>, publish/generated/<cluster> or
// node-config/<cluster>; "" for the files every cluster shares.
func pathOwner(p string) string {
	if c, ok := gitops.StateCluster(p); ok {
		return c
	}
	for _, d := range []string{render.RenderedDir, render.GeneratedDir, "node-config"} {
		if rest, ok := strings.CutPrefix(p, d+"/"); ok {
			if c, _, nested := strings.Cut(rest, "/"); nested {
				return c
			}
		}
	}
	return ""
}

// mergeChanges makes the one commit of a run out of the changes of each
// cluster: the files of a cluster of the run (pathOwner) come from its
// own changes alone; the others (the upgrade of an older catalog, the
// same in every cluster's full read) from the first cluster that changes
// them.
func mergeChanges(crs []*clusterRun, per map[string][]catalog.Change) []catalog.Change {
	inRun := map[string]bool{}
	for _, cr := range crs {
		inRun[cr.r.Cluster] = true
	}
	seen := map[string]bool{}
	var out []catalog.Change
	for _, cr := range crs {
		for _, c := range per[cr.r.Cluster] {
			o := pathOwner(c.Path)
			if inRun[o] && o != cr.r.Cluster || !inRun[o] && seen[c.Path] {
				continue
			}
			seen[c.Path] = true
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// publishClusters publishes the clusters of a run in one commit and
// pushes it; when the push is rejected because the catalog branch moved
// on (gitops.IsRejected), it opens the branch's new tip, renders every
// cluster again on top of it and pushes again, with backoff and jitter, at
// most pushAttempts times. Before every attempt each cluster's source
// commit is compared with ours (supersededBy): a cluster published from a
// newer commit is left as it is. crs share one tip (scope.tip).
func publishClusters(ctx context.Context, o Options, f forge.Forge, crs []*clusterRun, res *Result) error {
	for attempt := 1; ; attempt++ {
		err := publishOnce(ctx, o, f, crs, res)
		if err == nil || !gitops.IsRejected(err) {
			return err
		}
		if attempt == pushAttempts {
			return fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
		}
		delay := retryDelay(attempt)
		o.logf("catalog: push rejected, the branch moved on; fetching its tip and rendering again in %v (attempt %d of %d)", delay.Round(time.Millisecond), attempt+1, pushAttempts)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		old := crs[0].s.tip
		tip, err := catalog.OpenTip(ctx, o.Catalog)
		if err != nil {
			return err
		}
		old.Close()
		for _, cr := range crs {
			cr.s.tip = tip
			if err := cr.s.reopen(ctx); err != nil {
				return err
			}
		}
	}
}

// publishOnce is one attempt of publishClusters. The clusters whose
// delivery is DeliveryPullRequest get their pull requests first (f), so
// that a forge that refuses stops the run before the commit of the others
// reaches the catalog branch.
func publishOnce(ctx context.Context, o Options, f forge.Forge, crs []*clusterRun, res *Result) error {
	per := map[string][]catalog.Change{}
	proposed := map[string][]catalog.Change{}
	var changed, prs []*clusterRun
	for _, cr := range crs {
		cr.cres.Changes, cr.cres.Commit, cr.cres.Superseded, cr.skip = render.Changes{}, "", "", false
		cr.cres.Delivery, cr.cres.PullRequest = cr.r.cluster.Delivery, nil
		if cr.cres.Delivery == "" {
			cr.cres.Delivery = DeliveryPush
		}
		cr.res.Changes, cr.res.Commit, cr.res.Files, cr.res.Superseded = render.Changes{}, "", nil, ""
		newer, why, err := supersededBy(ctx, cr.r.Options, cr.res.SourceCommit, cr.s.state.Source.Commit)
		if err != nil {
			if len(crs) > 1 {
				err = fmt.Errorf("cluster %s: %w", cr.r.Cluster, err)
			}
			return err
		}
		if newer {
			if len(crs) > 1 {
				why = "cluster " + cr.r.Cluster + ": " + why
			}
			cr.r.logf("catalog: %s; nothing to do", why)
			cr.skip = true
			cr.res.Superseded = cr.s.state.Source.Commit
			cr.cres.Superseded = cr.res.Superseded
			continue
		}
		changes, err := renderCluster(ctx, cr.r, cr.s, cr.current, cr.res)
		if err != nil {
			return err
		}
		cr.cres.Changes, cr.cres.OCI = cr.res.Changes, cr.res.OCI
		if cr.r.cluster.Delivery == DeliveryPullRequest {
			prs = append(prs, cr)
			proposed[cr.r.Cluster] = changes
			continue
		}
		if changes != nil {
			per[cr.r.Cluster] = changes
			changed = append(changed, cr)
		}
	}
	records, recorded, err := proposeAndRecord(ctx, o, f, prs, proposed, len(crs) > 1)
	if err != nil {
		return err
	}
	res.Superseded = ""
	if len(changed) == 0 && len(records) > 0 {
		return commitRecords(ctx, o, crs[0].s.tip, records, recorded, res)
	}
	if len(changed) == 0 {
		if len(crs) > 0 && crs[0].skip {
			res.Superseded = crs[0].res.Superseded
		}
		o.logf("catalog: nothing changed, no commit")
		return nil
	}
	changes := append(mergeChanges(crs, per), records...)
	commit, origin := o.sourceCommit()
	msg, err := clustersCommitMessage(o.CommitTemplate, changed, len(crs) > 1, commit, origin)
	if err != nil {
		return inputErr(err)
	}
	msg = withRecords(msg, recorded)
	tip := crs[0].s.tip
	w, err := tip.Commit(changes, catalog.CommitOptionsFor(o.Catalog, msg, o.now()))
	if err != nil {
		return fmt.Errorf("committing catalog: %w", err)
	}
	if w.Commit.IsZero() {
		return nil
	}
	hash := w.Commit.String()
	res.Files = w.Files
	o.logf("catalog: pushing %s to %s", hash[:12], o.Catalog.Branch)
	if _, err := tip.Push(ctx, w); err != nil {
		return err
	}
	res.Commit = hash
	for _, cr := range changed {
		cr.res.Commit, cr.cres.Commit = hash, hash
		if len(crs) == 1 {
			cr.res.Files = w.Files
			continue
		}
		for _, f := range w.Files {
			if pathOwner(strings.TrimPrefix(f, tip.Prefix()+"/")) == cr.r.Cluster || pathOwner(f) == cr.r.Cluster {
				cr.res.Files = append(cr.res.Files, f)
			}
		}
	}
	o.logf("catalog: committed %s and pushed to %s (%d files)", hash[:12], o.Catalog.Branch, len(res.Files))
	return nil
}

// clustersCommitMessage is the message of the commit of the changed
// clusters: for one cluster (many false) the message of one cluster
// (commitMessage), else one grouped by cluster.
func clustersCommitMessage(tmpl templateExec, changed []*clusterRun, many bool, commit, origin string) (string, error) {
	var cs []ClusterChanges
	for _, cr := range changed {
		cs = append(cs, ClusterChanges{Name: cr.r.Cluster, Changes: cr.res.Changes})
	}
	if !many {
		cs[0].Name = ""
	}
	return commitMessageClusters(tmpl, cs, commit, origin)
}

// runClusters is Run for the clusters of o (clusterList), each read,
// linted and mirrored in turn (bundles read once, images mirrored once per
// destination), then published in one commit.
func runClusters(ctx context.Context, o Options) (*Result, error) {
	cls := o.clusterList()
	tgts, err := checkClusters(o, cls)
	if err != nil {
		return nil, err
	}
	o.Catalog.History = o.gated()
	var f forge.Forge
	if pullRequests(cls) {
		var err error
		if f, err = openForge(ctx, o, cls); err != nil {
			return nil, err
		}
	}
	tip, err := catalog.OpenTip(ctx, o.Catalog)
	if err != nil {
		return nil, err
	}
	if tip.NewBranch() {
		o.logf("catalog: branch %s does not exist in %s yet: it will be created from the template (check --catalog-branch if that is not what you want)", o.Catalog.Branch, o.Catalog.URL)
	}
	if err := warnRemoved(o, tip); err != nil {
		tip.Close()
		return nil, err
	}
	var crs []*clusterRun
	defer func() {
		t := tip
		if len(crs) > 0 {
			t = crs[0].s.tip
		}
		for _, cr := range crs {
			cr.s.Close()
		}
		t.Close()
	}()
	sh := newShared()
	sh.shards, sh.shardProblems = o.Shards, o.ShardProblems
	res := &Result{}
	for i, c := range cls {
		co := o.forCluster(c)
		if len(cls) > 1 {
			co.Log = withCluster(o.Log, c.Name)
		}
		cr, err := prepareCluster(ctx, co, tgts[i], tip, sh)
		if cr != nil {
			crs = append(crs, cr)
		}
		if err != nil {
			if cr != nil && len(cls) == 1 {
				return cr.res, err
			}
			if cr != nil {
				return cr.res, fmt.Errorf("cluster %s: %w", c.Name, err)
			}
			return nil, err
		}
	}
	// Every cluster is read, linted and verified before any image is
	// mirrored; a part of a split run plans the images of every cluster
	// first.
	var split *ShardRun
	if o.Shard.Total > 0 {
		if split, err = planSplitRun(ctx, o, crs, sh); err != nil {
			return crs[0].res, err
		}
	}
	for i, cr := range crs {
		if err := mirrorCluster(ctx, cr, sh); err != nil {
			if len(cls) == 1 {
				return cr.res, err
			}
			// The result holds what every cluster mirrored so far, for
			// the image report (--report).
			part := *cr.res
			part.Mirror = mergeMirror(crs[:i+1])
			return &part, fmt.Errorf("cluster %s: %w", cr.r.Cluster, err)
		}
	}
	if len(crs) == 1 {
		// One cluster: the result is that cluster's, as before clusters.
		*res = *crs[0].res
	} else {
		res.SourceCommit = crs[0].res.SourceCommit
		res.Mirror = mergeMirror(crs)
		for _, cr := range crs {
			r := cr.res
			res.Manifests = max(res.Manifests, r.Manifests)
			res.BundlesRead += r.BundlesRead
			res.Findings = append(res.Findings, r.Findings...)
			res.addVerification(r)
		}
	}
	if split != nil {
		res.Shard = split // a part never commits: the merge does
		return res, nil
	}
	err = publishClusters(ctx, o, f, crs, res)
	for _, cr := range crs {
		res.Clusters = append(res.Clusters, *cr.cres)
	}
	if len(crs) == 1 {
		r := crs[0].res
		res.Changes, res.Commit, res.Files, res.Superseded, res.OCI = r.Changes, r.Commit, r.Files, r.Superseded, r.OCI
		if res.Superseded == "" && res.Commit == "" {
			res.Files = nil
		}
	} else {
		res.Changes = render.Changes{}
		for _, cr := range crs {
			res.Changes = mergeListings(res.Changes, cr.res.Changes)
		}
	}
	return res, err
}

// checkClusters checks every cluster's settings before anything is read:
// its artifact patterns, its target and the target's settings, a
// destination registry, and its OCI reference. It returns the target of
// each cluster, in order. Errors are input and usage errors naming the
// setting.
func checkClusters(o Options, cls []ClusterOptions) ([]target.Target, error) {
	tgts := make([]target.Target, len(cls))
	for i, c := range cls {
		if err := c.checkPatterns(); err != nil {
			return nil, err
		}
		co := o.forCluster(c)
		tgt, err := co.newTarget()
		if err != nil {
			return nil, err
		}
		if err := tgt.Check(); err != nil {
			return nil, err
		}
		probe, err := newClient(co.Mirror, nil)
		if err != nil {
			return nil, err
		}
		if probe.DstHost() == "" {
			return nil, inputErr(errors.New("no destination registry: set --dst-registry HOST[:PORT][/PREFIX]"))
		}
		if co.OCI != "" {
			// A bad reference is told before anything is mirrored.
			if _, err := (&run{Options: co, mc: probe}).ociTag(); err != nil {
				return nil, err
			}
		}
		tgts[i] = tgt
	}
	return tgts, nil
}

// mergeListings adds b's items to a's, each once, sorted.
func mergeListings(a, b render.Changes) render.Changes {
	add := func(x, y []string) []string {
		set := map[string]bool{}
		for _, s := range x {
			set[s] = true
		}
		for _, s := range y {
			if !set[s] {
				set[s] = true
				x = append(x, s)
			}
		}
		sort.Strings(x)
		return x
	}
	a.Listed, a.Upgraded, a.Relisted = add(a.Listed, b.Listed), add(a.Upgraded, b.Upgraded), add(a.Relisted, b.Relisted)
	a.Delisted, a.Updated = add(a.Delisted, b.Delisted), add(a.Updated, b.Updated)
	return a
}

// registryHost is the host[:port] of a HOST[:PORT][/PREFIX] destination.
func registryHost(dst string) string {
	d := strings.TrimPrefix(strings.TrimPrefix(dst, "https://"), "http://")
	h, _, _ := strings.Cut(d, "/")
	return h
}

// warnRemoved warns about every rendered/<cluster> of the tip whose
// cluster publish.yaml no longer declares (Options.Declared): it is kept
// as it is, since removing it would make Argo CD or Flux prune the
// cluster's objects.
func warnRemoved(o Options, tip *catalog.Tip) error {
	if len(o.Declared) == 0 {
		return nil
	}
	declared := map[string]bool{}
	for _, c := range o.Declared {
		declared[c] = true
	}
	var gone []string
	_, err := tip.Files(render.RenderedDir, func(p string, isDir bool) bool {
		c, nested := strings.CutPrefix(p, render.RenderedDir+"/")
		if !isDir || !nested || strings.Contains(c, "/") {
			return false
		}
		if !declared[c] {
			gone = append(gone, c)
		}
		return true
	})
	if err != nil {
		return err
	}
	sort.Strings(gone)
	for _, c := range gone {
		o.warnf("cluster %s is not in publish.yaml any more: %s/%s is kept as it is (removing it would make Argo CD or Flux prune its objects); remove it by hand once no cluster syncs it", c, render.RenderedDir, c)
	}
	return nil
}

// mergeMirror joins the mirror reports of clusters crs, in their order:
// their images and the targets they left untried.
func mergeMirror(crs []*clusterRun) *mirror.Report {
	out := &mirror.Report{}
	for _, cr := range crs {
		if m := cr.res.Mirror; m != nil {
			out.Images = append(out.Images, m.Images...)
			out.Pending = append(out.Pending, m.Pending...)
		}
	}
	return out
}
