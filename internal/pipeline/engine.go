package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/seed"
	"github.com/operator-publish/publish/internal/source"
	"github.com/operator-publish/publish/internal/source/diff"
	"github.com/operator-publish/publish/internal/target"
)

// scope is what one `publish plan` or `publish run` works on: the catalog
// branch tip (catalog.Tip, which also writes and pushes the commit), the
// published state, the versions read from the package repo, and what
// change detection found. Both commands go through it, in one of two
// ways (docs/design.md, "The engine"):
//
//   - incremental: only the artifacts a change touches are read (their
//     manifests, their state entries, their catalog files), and only they
//     are rendered, from the Git objects of the tip: the cost grows with
//     the change, not with the repo;
//   - full: every manifest is read and the whole tip is read into memory,
//     where the target renders everything it needs.
//
// decide chooses the way over facts gathered up front; the way is a
// catalogReader (reader.go), and nothing else compares the two.
type scope struct {
	o   Options
	tgt target.Target
	tip *catalog.Tip
	// ownTip: the scope opened tip and closes it; else the run's clusters
	// share it (openScopeOn) and the run closes it.
	ownTip bool
	// cat is the catalog in memory that the target renders into: the
	// tip's whole catalog (full), or its overlays, the files outside
	// rendered/ and publish/ (incremental).
	cat render.Files
	// way is how the scope was read: *fullRead or *incrementalRead.
	way catalogReader
	// state is the published state: whole (full), or its header with the
	// entries of the touched artifacts only (incremental).
	state *gitops.State
	// oldState is the tip's state file of the cluster
	// (gitops.StatePath), nil when it has none; legacy says the tip has
	// the older single state file of every cluster, which the full read
	// upgrades (seed.Migrate).
	oldState []byte
	legacy   bool

	files   []manifest.File
	vs      []*model.Version
	scanErr error // manifests that did not parse (plan: findings)
	mc      *mirror.Client
	// diff is change detection's answer; diffErr why there is none
	// (full read only: the package repo is not a Git repository, and
	// every version counts as changed).
	diff    *diff.Result
	diffErr error
	// dirty holds the manifest paths (relative to the source) whose
	// content on disk is not HEAD's (source.Repo.Dirty), both ways.
	dirty map[string]bool
	// written is the commit the last render wrote, for push.
	written *catalog.Written
	// gates are the cluster's gates with what the tip says of the
	// upstream clusters (openGates); nil without gates.
	gates *gateSet
}

// scopeOptions says what the scope is for.
type scopeOptions struct {
	// pr, targetBranch: `publish plan --pr`: compare HEAD with its merge
	// base on targetBranch.
	pr           bool
	targetBranch string
	// plan: manifests that do not parse become findings; else (run) they
	// stop the run with a *LintError before any registry is touched.
	plan bool
}

// openScopeOn opens the scope of o's cluster on a tip the caller opened
// and closes, reading what a plan or run needs the incremental way when it
// applies, else the full way (saying why in the log): the clusters of one
// run or plan share the tip, and a run its one commit. Errors: input errors
// (*InputError: a catalog that is not one, a missing overlay, manifests
// that do not parse), and a change detection that fails.
func openScopeOn(ctx context.Context, o Options, so scopeOptions, tgt target.Target, tip *catalog.Tip) (*scope, error) {
	s := &scope{o: o, tgt: tgt, tip: tip}
	if err := s.openTip(ctx); err != nil {
		return nil, err
	}
	if err := s.read(ctx, so); err != nil {
		return nil, err
	}
	return s, nil
}

// read reads the scope the incremental way when it applies, else the
// full way; on an error the scope is closed.
func (s *scope) read(ctx context.Context, so scopeOptions) error {
	o := s.o
	err := s.incremental(ctx, so)
	var full *catalog.FullReadRequiredError
	if errors.As(err, &full) {
		o.logf("catalog: reading the whole package repo and catalog: %s", full.Reason)
		err = s.readFull(ctx, so)
	}
	if err != nil {
		s.Close()
		return err
	}
	return nil
}

// openCatalogScope opens the catalog branch tip and reads it whole, with
// no package repo: `publish push --catalog`, which brings its versions
// from the archive.
func openCatalogScope(ctx context.Context, o Options, tgt target.Target) (*scope, error) {
	s := &scope{o: o, tgt: tgt, ownTip: true}
	if err := s.openTip(ctx); err != nil {
		return nil, err
	}
	if s.tip.NewBranch() {
		o.logf("catalog: branch %s does not exist in %s yet: it will be created from the template (check --catalog-branch if that is not what you want)", o.Catalog.Branch, o.Catalog.URL)
	}
	if err := s.readCatalog(&fullRead{}); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// openTip opens the catalog branch tip, unless the scope was given one
// (openScopeOn), gives a target.HistoryUser that wants it the cluster's
// catalog history, and reads the cluster's state file from the tip.
func (s *scope) openTip(ctx context.Context) error {
	if s.tip == nil {
		tip, err := catalog.OpenTip(ctx, s.o.Catalog)
		if err != nil {
			return err
		}
		s.tip = tip
	}
	tip := s.tip
	if hu, ok := s.tgt.(target.HistoryUser); ok && hu.WantsHistory() {
		h, err := tip.History(ctx, s.o.Cluster)
		if err != nil {
			return err
		}
		hu.UseHistory(h)
	}
	var err error
	if s.gates, err = openGates(ctx, s.o, tip); err != nil {
		return err
	}
	s.oldState, _, err = tip.ReadFile(gitops.StatePath(s.o.Cluster))
	if err != nil {
		return err
	}
	_, s.legacy, err = tip.ReadFile(gitops.LegacyStatePath)
	return err
}

// Close closes the tip the scope opened (openCatalogScope); a tip the
// caller gave (openScopeOn) stays open.
func (s *scope) Close() error {
	if !s.ownTip {
		return nil
	}
	return s.tip.Close()
}

// incremental reads the scope the incremental way when decide, over the
// facts gathered up front (catalogFacts, sourceFacts), allows it; else it
// returns *catalog.FullReadRequiredError with decide's reason. The reading
// of the touched artifacts gives up the same way when it finds what no
// fact shows (a recorded manifest gone without a change, manifest paths not
// recorded, the destination registry changed); lint runs only after that,
// once. A change detection that fails is an error, never a reason for the
// full read.
func (s *scope) incremental(ctx context.Context, so scopeOptions) error {
	o := s.o
	f := facts{cluster: o.Cluster, askedFull: o.fullRead, changeSet: o.Changed != nil}
	var src sourceFacts
	r, err := s.catalogFacts(&f)
	if err != nil {
		return err
	}
	if w, _ := decide(f); w == wayIncremental {
		if err := s.gatherSource(ctx, so, r.idx.Header, &f, &src); err != nil {
			return err
		}
	}
	if w, reason := decide(f); w == wayFull {
		return catalog.FullReadRequired("%s", reason)
	}
	s.dirty = pathSet(src.dirty)
	// The manifests the last publish took from a dirty tree are read
	// again (markChanged), as are the dirty ones now.
	again := append(append([]string(nil), src.dirty...), r.idx.Header.Source.Dirty...)
	// So are the versions whose gates passed since the last publish: a
	// run lists them without a change in the package repo.
	pending, err := s.gates.pendingPaths(o, r.idx)
	if err != nil {
		return err
	}
	again = append(again, pending...)
	files, ms, scanErr, touched, err := scopedScan(o.Source, src.repo.Prefix(), r.idx, src.dr, src.since, again)
	if err != nil {
		return err
	}
	// Only the touched artifacts can change: the state holds their
	// entries alone.
	r.touched = touched
	if err := s.readTouched(r); err != nil {
		return err
	}
	if s.mc, err = newClient(o.Mirror, ms); err != nil {
		return err
	}
	if h := s.mc.DstHost(); h != "" {
		for _, a := range s.state.Artifacts {
			if a.Present && a.Registry != h {
				return catalog.FullReadRequired("the destination registry changed since the last publish")
			}
		}
	}
	if so.plan {
		s.scanErr = scanErr
	} else if err := checkScanned(ctx, o, files, ms, scanErr); err != nil {
		return err
	}
	s.files, s.vs, s.diff, s.way = files, model.NewVersions(ms), src.dr, r
	return nil
}

// sourceFacts is what gatherSource read of the package repo for the
// incremental way: the repo, change detection since the base (dr) and since
// the published state (since), and the dirty manifests.
type sourceFacts struct {
	repo      *source.Repo
	dr, since *diff.Result
	dirty     []string
}

// gatherSource fills the package repo's facts: the packages directory,
// change detection since the base and since the published source commit
// (one comparison when they are the same commit), and the manifests that
// differ from HEAD. It stops at the first fact that forces the full way.
// header is the published state's header. Errors: a package repo or a
// change detection that fails.
func (s *scope) gatherSource(ctx context.Context, so scopeOptions, header *gitops.State, f *facts, src *sourceFacts) error {
	o := s.o
	root := packagesRoot(o.Source, o.PackagesDir)
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		f.noPackages = root
		return nil
	}
	repo, err := o.sourceRepo()
	if err != nil {
		return err
	}
	src.repo = repo
	dr, err := diff.Compute(ctx, diff.Options{
		Repo: o.Source, Source: repo, PackagesDir: o.PackagesDir, Base: o.Base,
		PR: so.pr, TargetBranch: so.targetBranch,
		StateCommit: header.Source.Commit, Fetch: !o.NoFetch, Log: o.logWriter(),
	})
	if err != nil {
		return fmt.Errorf("change detection: %w", err)
	}
	if f.noBase = dr.All; f.noBase {
		return nil
	}
	since := dr // the changes since the published state
	if dr.Base != header.Source.Commit {
		since, err = diff.Compute(ctx, diff.Options{Repo: o.Source, Source: repo, PackagesDir: o.PackagesDir, Base: header.Source.Commit})
		if err != nil {
			return fmt.Errorf("change detection since the published source commit %s: %w", report.ShortCommit(header.Source.Commit), err)
		}
		if since.All {
			f.outsideHistory = report.ShortCommit(header.Source.Commit)
			return nil
		}
	}
	dirty, err := repo.Dirty(root)
	if err != nil {
		return fmt.Errorf("comparing the package repo's working tree with HEAD: %w", err)
	}
	f.suspect = dirty.Suspect
	src.dr, src.since, src.dirty = dr, since, dirty.Paths
	return nil
}

// catalogFacts fills the facts that depend on the catalog alone, and
// reads the overlays into memory (s.cat): also what a retry judges again on the
// branch's new tip. It stops at the first fact that forces the full way;
// when none does, it returns the incremental reader of the tip (its state
// index and render key; touched still empty).
func (s *scope) catalogFacts(f *facts) (*incrementalRead, error) {
	o := s.o
	if w, _ := decide(*f); w == wayFull {
		return nil, nil
	}
	inc, ok := s.tgt.(target.Incremental)
	if !ok {
		f.wholeCatalog = o.Target
		return nil, nil
	}
	switch {
	case s.tip.Head() == "":
		f.emptyCatalog = true
		return nil, nil
	case s.legacy:
		f.legacyState = true
		return nil, nil
	case s.oldState == nil:
		f.noState = true
		return nil, nil
	}
	idx, err := gitops.SplitState(gitops.StatePath(o.Cluster), s.oldState)
	if err != nil {
		f.stateErr = err
		return nil, nil
	}
	key := idx.Header.Rendered[o.Cluster]
	if idx.Header.Source.Commit == "" || key == "" || len(idx.Names()) == 0 {
		f.noHeader = true
		return nil, nil
	}
	if f.missing, err = s.missingRendered(); err != nil || f.missing != "" {
		return nil, err
	}
	for _, d := range renderedDirs(o.Cluster) {
		links, err := s.tip.Links(d, false)
		if err != nil {
			return nil, err
		}
		if len(links) > 0 {
			f.linked = links[0]
			return nil, nil
		}
	}
	overlay, err := s.tip.Files("", func(p string, isDir bool) bool {
		return isDir && (p == render.RenderedDir || p == "publish" || p == render.ChartsDir)
	})
	if err != nil {
		return nil, err
	}
	s.cat = overlay
	if err := render.CheckOverlay(s.cat, o.Cluster); err != nil {
		return nil, inputErr(err)
	}
	if f.keyChanged = o.renderKey(inc.Key(s.cat)) != key; f.keyChanged {
		return nil, nil
	}
	return &incrementalRead{idx: idx, key: key}, nil
}

// missingRendered returns the first of rendered/<cluster> and its
// generated kustomization that the tip lacks, "" when it has both.
func (s *scope) missingRendered() (string, error) {
	c := s.o.Cluster
	if ok, err := s.tipHas(path.Join(render.RenderedDir, c)); err != nil || !ok {
		return render.RenderedDir + "/" + c, err
	}
	if _, ok, err := s.tip.ReadFile(render.GeneratedKustomization(c)); err != nil || !ok {
		return render.GeneratedKustomization(c), err
	}
	return "", nil
}

// tipHas reports whether the tip has a directory at dir (Git keeps no
// empty one), without reading its files.
func (s *scope) tipHas(dir string) (bool, error) {
	found := false
	_, err := s.tip.Files(dir, func(string, bool) bool {
		found = true
		return true
	})
	return found, err
}

// readTouched sets the state to the header and the entries of the
// artifacts r touched.
func (s *scope) readTouched(r *incrementalRead) error {
	header := r.idx.Header
	s.state = &gitops.State{APIVersion: header.APIVersion, Kind: header.Kind, Source: header.Source, Rendered: header.Rendered, OCI: header.OCI, Approvals: header.Approvals}
	for _, n := range sortedKeys(r.touched) {
		a, ok, err := r.idx.Artifact(n)
		if err != nil {
			return catalog.FullReadRequired("%v", err)
		}
		if ok {
			s.state.Artifacts = append(s.state.Artifacts, a)
		}
	}
	return nil
}

// selected returns the versions of vs whose artifacts the cluster's
// selection takes (ClusterOptions.Include, Exclude); those left out are
// delisted on this cluster, as if their manifests were gone. A pattern
// that matches no artifact of the package repo or of the cluster's state
// is a warning.
func (s *scope) selected(vs []*model.Version) []*model.Version {
	c := s.o.cluster
	if c.selection() == "" {
		return vs
	}
	names := map[string]bool{}
	for _, v := range vs {
		names[v.Manifest.Artifact] = true
	}
	s.way.names(names)
	for _, a := range s.state.Artifacts {
		names[a.Name] = true
	}
	if s.way.warnsUnmatched() {
		selectionWarnings(s.o, names)
	}
	var out []*model.Version
	for _, v := range vs {
		if c.selects(v.Manifest.Artifact) {
			out = append(out, v)
		}
	}
	return out
}

// targetState is the state as the target reads it: with the target's
// part of the cluster's render key (targetKey).
func (s *scope) targetState() *gitops.State {
	c := *s.state
	if k, ok := c.Rendered[s.o.Cluster]; ok {
		c.Rendered = map[string]string{s.o.Cluster: targetKey(k)}
	}
	return &c
}

// coversAll reports whether the scope holds every artifact of the state.
func (s *scope) coversAll() bool { return s.way.coversAll() }

// readFull reads the scope the full way: the whole tip into dir, the
// state, change detection, every manifest.
func (s *scope) readFull(ctx context.Context, so scopeOptions) error {
	o := s.o
	r := &fullRead{}
	s.way = r
	if err := s.readCatalog(r); err != nil {
		return err
	}
	repo, err := o.sourceRepo()
	if err != nil {
		return err
	}
	root := packagesRoot(o.Source, o.PackagesDir)
	switch {
	case !repo.IsGit():
		// Not a Git checkout: no history to compare, every version
		// counts as changed (said in the log and the plan).
		s.diffErr = repo.NotGit()
	case o.Changed == nil:
		dr, err := diff.Compute(ctx, diff.Options{
			Repo: o.Source, Source: repo, PackagesDir: o.PackagesDir, Base: o.Base,
			PR: so.pr, TargetBranch: so.targetBranch,
			StateCommit: s.state.Source.Commit, Fetch: !o.NoFetch, Log: o.logWriter(),
		})
		if err != nil {
			return fmt.Errorf("change detection: %w", err)
		}
		s.diff = dr
	}
	if repo.IsGit() {
		if _, err := os.Stat(root); err == nil {
			dirty, err := repo.Dirty(root)
			if err != nil {
				return fmt.Errorf("comparing the package repo's working tree with HEAD: %w", err)
			}
			s.dirty = pathSet(dirty.Paths)
		}
	}
	var ms []*manifest.PackageManifest
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) && o.AllowEmpty && !so.plan {
		// The last operator was removed, and Git keeps no empty
		// directory: with --allow-empty that delists every artifact.
	} else {
		s.files, ms, s.scanErr = manifest.ScanFiles(o.Source, root)
		if ms == nil && s.scanErr != nil && !errors.As(s.scanErr, new(*manifest.Error)) {
			if so.plan {
				return inputErr(s.scanErr)
			}
			return inputErr(fmt.Errorf("%w; if every operator was removed and delisting every artifact is what you want, pass --allow-empty", s.scanErr)) // the directory itself is missing
		}
		if !so.plan {
			if err := checkScanned(ctx, o, s.files, ms, s.scanErr); err != nil {
				return err
			}
			s.scanErr = nil
		}
	}
	s.vs = model.NewVersions(ms)
	s.mc, err = newClient(o.Mirror, ms)
	return err
}

// readCatalog reads the whole tip into memory (s.cat), keeping it as r's
// base, and reads its state; a catalog of the older layout is upgraded
// (seed.Migrate, its changes go into the commit) and a first publish is
// seeded from the template (seed.Prepare).
func (s *scope) readCatalog(r *fullRead) error {
	s.way = r
	base, err := s.tip.Files("", nil)
	if err != nil {
		return err
	}
	r.base = base
	s.cat = r.base.Clone()
	r.links = nil
	for _, d := range renderedDirs(s.o.Cluster) {
		links, err := s.tip.Links(d, true)
		if err != nil {
			return err
		}
		r.links = append(r.links, links...)
	}
	if _, err = seed.Migrate(s.cat); err != nil {
		return err
	}
	s.state, err = seed.Prepare(s.cat, seed.Options{
		Cluster: s.o.Cluster, RunClusters: s.o.runClusters, Empty: s.tip.Head() == "",
		Overlays: overlays(s.o.Target), Catalog: s.o.Catalog,
	})
	return err
}

// renderedDirs are the directories of the catalog that publish writes
// whole for cluster: rendered/<cluster> and its generated base.
func renderedDirs(cluster string) []string {
	return []string{render.RenderedDir + "/" + cluster, render.GeneratedBase(cluster)}
}

// overlays reports whether the target named renders through the cluster's
// kustomize overlay (target.Capabilities.Overlay).
func overlays(name string) bool {
	k, err := target.Lookup(name)
	return err == nil && k.Caps.Overlay
}

// reopen reads the branch's new tip (s.tip, which the caller replaced)
// after a rejected push, for the next attempt: the versions and the
// touched artifacts stay those already read and mirrored. On the
// incremental way, a new tip whose overlays or state no longer allow it is
// an error saying to run again (nothing was written).
func (s *scope) reopen(ctx context.Context) error {
	if err := s.openTip(ctx); err != nil {
		return err
	}
	return s.way.reread(ctx, s)
}
