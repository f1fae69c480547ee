package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/checkout"
	"github.com/operator-publish/publish/internal/diff"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
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
//   - full: every manifest is read and the whole tip is written into a
//     temporary directory, where the target renders everything it needs.
//
// incremental decides which: every condition that forces the full read is
// there, and returns *catalog.FullReadRequiredError.
type scope struct {
	o   Options
	tgt target.Target
	tip *catalog.Tip
	// ownTip: the scope opened tip and closes it; else the run's clusters
	// share it (openScopeOn) and the run closes it.
	ownTip bool
	// dir is a temporary directory: the tip's whole catalog (full), or
	// its overlays, the files outside rendered/ and publish/
	// (incremental).
	dir string
	// base is what was written into dir from the tip (full).
	base map[string][]byte
	full bool
	// state is the published state: whole (full), or its header with the
	// entries of the touched artifacts only (incremental).
	state *gitops.State
	// oldState is the tip's state file of the cluster
	// (gitops.StatePath), nil when it has none; legacy says the tip has
	// the older single state file of every cluster, which the full read
	// upgrades (migrateCatalog).
	oldState []byte
	legacy   bool
	// idx and key (incremental): the state split by artifact, and the
	// render key of the overlays, equal to the recorded one.
	idx *gitops.StateIndex
	key string
	// touched (incremental) names the artifacts read.
	touched map[string]bool

	files   []manifest.File
	vs      []*model.Version
	scanErr error // manifests that did not parse (plan: findings)
	mc      *mirror.Client
	// diff is change detection's answer; diffErr why it failed (full
	// read only: every version then counts as changed).
	diff    *diff.Result
	diffErr error
	// written is the commit the last render wrote, for push.
	written *catalog.Written
	// migrated says the full read upgraded the catalog of the older
	// layout in dir (migrateCatalog): its changes go into the commit.
	migrated bool
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

// openScope opens the catalog branch tip and reads what a plan or run
// needs, the incremental way when it applies, else the full way (saying
// why in the log). The caller closes the scope. Errors: those of
// catalog.OpenTip (*gitops.UnreachableError, *gitops.MissingBranchError),
// input errors (*InputError: a catalog that is not one, a missing
// overlay, manifests that do not parse), and a change detection that
// fails on the incremental way.
func openScope(ctx context.Context, o Options, so scopeOptions, tgt target.Target) (*scope, error) {
	s := &scope{o: o, tgt: tgt, ownTip: true}
	if err := s.openTip(ctx); err != nil {
		return nil, err
	}
	if s.tip.NewBranch() {
		o.logf("catalog: branch %s does not exist in %s yet: it will be created from the template (check --catalog-branch if that is not what you want)", o.Catalog.Branch, o.Catalog.URL)
	}
	return s, s.read(ctx, so)
}

// openScopeOn is openScope on a tip the caller opened and closes: the
// clusters of one run share it, and its one commit.
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
	s := &scope{o: o, tgt: tgt, full: true, ownTip: true}
	if err := s.openTip(ctx); err != nil {
		return nil, err
	}
	if s.tip.NewBranch() {
		o.logf("catalog: branch %s does not exist in %s yet: it will be created from the template (check --catalog-branch if that is not what you want)", o.Catalog.Branch, o.Catalog.URL)
	}
	if err := s.readCatalog(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// openTip opens the catalog branch tip, unless the scope was given one
// (openScopeOn), and reads the cluster's state file from it.
func (s *scope) openTip(ctx context.Context) error {
	if s.tip == nil {
		tip, err := catalog.OpenTip(ctx, s.o.Catalog)
		if err != nil {
			return err
		}
		s.tip = tip
	}
	var err error
	if s.dir, err = os.MkdirTemp("", "publish-catalog-"); err != nil {
		if s.ownTip {
			s.tip.Close()
		}
		return err
	}
	tip := s.tip
	s.oldState, _, err = tip.ReadFile(gitops.StatePath(s.o.Cluster))
	if err != nil {
		return err
	}
	_, s.legacy, err = tip.ReadFile(gitops.LegacyStatePath)
	return err
}

// Close removes the temporary directory and closes the tip it opened.
func (s *scope) Close() error {
	err := os.RemoveAll(s.dir)
	if !s.ownTip {
		return err
	}
	if cerr := s.tip.Close(); err == nil {
		err = cerr
	}
	return err
}

// incremental reads the scope the incremental way. It is the one place
// that decides whether that applies: it returns
// *catalog.FullReadRequiredError when the target renders the catalog
// whole, a change set was given, the catalog was never published by this
// version of publish (no commits, no state, no render key or source
// commit, manifest paths not recorded), the overlays or the render
// configuration changed since the last publish (the render key), change
// detection has no base or the published source commit is not in the
// package repo, a recorded manifest is gone or is not a regular file, the
// packages directory is gone, or the destination registry changed. A
// change detection that fails is an error, not a reason for the full
// read.
func (s *scope) incremental(ctx context.Context, so scopeOptions) error {
	o := s.o
	switch {
	case o.fullRead:
		return catalog.FullReadRequired("asked for")
	case o.Changed != nil:
		return catalog.FullReadRequired("a change set was given")
	}
	if err := s.catalogSide(); err != nil {
		return err
	}
	root := packagesRoot(o.Source, o.PackagesDir)
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return catalog.FullReadRequired("%s is not a directory", root)
	}
	header := s.idx.Header
	dr, err := diff.Compute(ctx, diff.Options{
		Repo: o.Source, PackagesDir: o.PackagesDir, Base: o.Base,
		PR: so.pr, TargetBranch: so.targetBranch,
		StateCommit: header.Source.Commit, Fetch: !o.NoFetch, Log: o.logWriter(),
	})
	if err != nil {
		return fmt.Errorf("change detection: %w", err)
	}
	if dr.All {
		return catalog.FullReadRequired("change detection has no base")
	}
	since := dr // the changes since the published state
	if dr.Base != header.Source.Commit {
		since, err = diff.Compute(ctx, diff.Options{Repo: o.Source, PackagesDir: o.PackagesDir, Base: header.Source.Commit})
		if err != nil || since.All {
			return catalog.FullReadRequired("the published source commit %s is not in the package repo", short(header.Source.Commit))
		}
	}
	prefix, err := sourcePrefix(o.Source)
	if err != nil {
		return catalog.FullReadRequired("%v", err)
	}
	dirty, suspect, err := dirtyManifests(o.Source, prefix, root)
	if err != nil {
		return catalog.FullReadRequired("the package repo's index cannot be read: %v", err)
	}
	if suspect != "" {
		return catalog.FullReadRequired("%s is named like a manifest but is not one publish reads", suspect)
	}
	files, ms, scanErr, touched, err := scopedScan(o.Source, prefix, s.idx, dr, since, dirty)
	if err != nil {
		return err
	}
	if so.plan {
		s.scanErr = scanErr
	} else if err := checkScanned(ctx, o, files, ms, scanErr); err != nil {
		return err
	}
	// Only the touched artifacts can change: the state holds their
	// entries alone.
	s.touched = touched
	if err := s.readTouched(); err != nil {
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
	s.files, s.vs, s.diff = files, model.NewVersions(ms), dr
	return nil
}

// catalogSide checks the conditions of the incremental way that depend on
// the catalog alone, and writes the overlays into dir: also what a retry
// checks again on the branch's new tip.
func (s *scope) catalogSide() error {
	o := s.o
	inc, ok := s.tgt.(target.Incremental)
	if !ok {
		return catalog.FullReadRequired("the %s target renders the whole catalog", o.Target)
	}
	if s.tip.Head() == "" {
		return catalog.FullReadRequired("the catalog branch has no commits")
	}
	if s.legacy {
		return catalog.FullReadRequired("the catalog has the older single %s: upgrading it to one state file and one generated base per cluster", gitops.LegacyStatePath)
	}
	if s.oldState == nil {
		return catalog.FullReadRequired("the catalog has no %s yet", gitops.StatePath(o.Cluster))
	}
	idx, err := gitops.SplitState(gitops.StatePath(o.Cluster), s.oldState)
	if err != nil {
		return catalog.FullReadRequired("%v", err)
	}
	header := idx.Header
	s.key = header.Rendered[o.Cluster]
	if header.Source.Commit == "" || s.key == "" || len(idx.Names()) == 0 {
		return catalog.FullReadRequired("the catalog has no render key or source commit for cluster %s", o.Cluster)
	}
	if ok, err := s.tipHas(path.Join(render.RenderedDir, o.Cluster)); err != nil {
		return err
	} else if !ok {
		return catalog.FullReadRequired("the catalog has no %s/%s", render.RenderedDir, o.Cluster)
	}
	if _, ok, err := s.tip.ReadFile(render.GeneratedKustomization(o.Cluster)); err != nil {
		return err
	} else if !ok {
		return catalog.FullReadRequired("the catalog has no %s", render.GeneratedKustomization(o.Cluster))
	}
	overlay, err := s.tip.Files("", func(p string, isDir bool) bool {
		return isDir && (p == render.RenderedDir || p == "publish")
	})
	if err != nil {
		return err
	}
	if err := render.Write(s.dir, nil, overlay); err != nil {
		return err
	}
	if err := render.CheckOverlay(s.dir, o.Cluster); err != nil {
		return inputErr(err)
	}
	if k, err := inc.Key(s.dir); err != nil {
		return err
	} else if o.renderKey(k) != s.key {
		return catalog.FullReadRequired("the overlays, the render configuration or the cluster's artifact selection changed since the last publish")
	}
	s.idx = idx
	return nil
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

// readTouched sets the state to the header and the touched artifacts'
// entries.
func (s *scope) readTouched() error {
	header := s.idx.Header
	s.state = &gitops.State{APIVersion: header.APIVersion, Kind: header.Kind, Source: header.Source, Rendered: header.Rendered, OCI: header.OCI}
	for _, n := range sortedKeys(s.touched) {
		a, ok, err := s.idx.Artifact(n)
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
	if s.idx != nil {
		for _, n := range s.idx.Names() {
			names[n] = true
		}
	}
	for _, a := range s.state.Artifacts {
		names[a.Name] = true
	}
	if s.full {
		for field, ps := range map[string][]string{"include": c.Include, "exclude": c.Exclude} {
			for _, p := range ps {
				hit := false
				for n := range names {
					if ok, _ := path.Match(p, n); ok {
						hit = true
						break
					}
				}
				if !hit {
					s.o.warnf("publish.yaml clusters.%s.%s: pattern %q matches no artifact", c.Name, field, p)
				}
			}
		}
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
func (s *scope) coversAll() bool {
	if s.full {
		return true
	}
	for _, n := range s.idx.Names() {
		if !s.touched[n] {
			return false
		}
	}
	return true
}

// readFull reads the scope the full way: the whole tip into dir, the
// state, change detection, every manifest.
func (s *scope) readFull(ctx context.Context, so scopeOptions) error {
	o := s.o
	s.full, s.idx, s.touched = true, nil, nil
	if err := s.readCatalog(); err != nil {
		return err
	}
	if o.Changed == nil {
		dr, err := diff.Compute(ctx, diff.Options{
			Repo: o.Source, PackagesDir: o.PackagesDir, Base: o.Base,
			PR: so.pr, TargetBranch: so.targetBranch,
			StateCommit: s.state.Source.Commit, Fetch: !o.NoFetch, Log: o.logWriter(),
		})
		s.diff, s.diffErr = dr, err
		if err != nil {
			s.diff = nil
		}
	}
	root := packagesRoot(o.Source, o.PackagesDir)
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
	var err error
	s.mc, err = newClient(o.Mirror, ms)
	return err
}

// readCatalog writes the whole tip into dir and reads its state; a first
// publish is seeded from the template (prepareCatalog).
func (s *scope) readCatalog() error {
	if err := os.RemoveAll(s.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	var err error
	if s.base, err = s.tip.Files("", nil); err != nil {
		return err
	}
	if err := writeFiles(s.dir, s.base); err != nil {
		return err
	}
	if s.migrated, err = migrateCatalog(s.dir); err != nil {
		return err
	}
	s.state, err = prepareCatalog(s.dir, s.tip.Head() == "", s.o, s.tgt)
	return err
}

// reopen reads the branch's new tip (s.tip, which the caller replaced)
// after a rejected push, for the next attempt: the versions and the
// touched artifacts stay those already read and mirrored. On the
// incremental way, a new tip whose overlays or state no longer allow it is
// an error saying to run again (nothing was written).
func (s *scope) reopen(ctx context.Context) error {
	os.RemoveAll(s.dir)
	if err := s.openTip(ctx); err != nil {
		return err
	}
	if s.full {
		return s.readCatalog()
	}
	err := s.catalogSide()
	var full *catalog.FullReadRequiredError
	if errors.As(err, &full) {
		return fmt.Errorf("the catalog branch %s moved on during this run and %s: nothing was pushed; run publish again", s.o.Catalog.Branch, full.Reason)
	}
	if err != nil {
		return err
	}
	return s.readTouched()
}

// render renders next (the merged records of the scope's artifacts) and
// returns the changes to the catalog (relative to its root, sorted) and
// the render key to record. preview is `publish plan`: the target's
// Preview, which needs no registry write, and its warning.
func (s *scope) render(ctx context.Context, next []model.ArtifactRecord, preview bool) (changes []catalog.Change, key, warning string, err error) {
	if !s.full {
		changes, err = s.tgt.(target.Incremental).RenderArtifacts(s.tip, s.dir, next)
		return changes, s.key, "", err
	}
	// A changed artifact selection renders the cluster whole.
	prevKey := s.state.Rendered[s.o.Cluster]
	if s.o.renderKey(targetKey(prevKey)) != prevKey {
		prevKey = ""
	}
	prevKey = targetKey(prevKey)
	if preview {
		warning, err = s.tgt.Preview(s.dir, next, prevKey)
	} else {
		key, err = s.tgt.Render(ctx, s.dir, next, prevKey)
		key = s.o.renderKey(key)
	}
	if err != nil {
		return nil, "", "", err
	}
	now, err := dirFiles(s.dir)
	if err != nil {
		return nil, "", "", err
	}
	for p, data := range now {
		if old, ok := s.base[p]; !ok || !bytes.Equal(old, data) {
			changes = append(changes, catalog.Change{Path: p, Data: data})
		}
	}
	for p := range s.base {
		if _, ok := now[p]; !ok {
			changes = append(changes, catalog.Change{Path: p, Delete: true})
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes, key, warning, nil
}

// stateFile returns publish/state.yaml after a publish of next from the
// source commit (repo, commit), with the render keys rendered and the OCI
// catalogs oci: the whole
// state marshalled (full), or the tip's file with the touched artifacts'
// entries replaced (incremental), the same bytes either way.
func (s *scope) stateFile(src gitops.Source, next []model.ArtifactRecord, rendered map[string]string, oci map[string]gitops.OCIRecord) ([]byte, error) {
	header := &gitops.State{Source: src, Rendered: rendered, OCI: oci}
	if s.full {
		header.Artifacts = next
		return header.Marshal()
	}
	return s.idx.Marshal(header, next)
}

// commit writes the commit of changes on the tip (catalog.Tip.Commit):
// its hash ("" when the tree did not change) and the files it changes.
func (s *scope) commit(changes []catalog.Change, co catalog.CommitOptions) (string, []string, error) {
	w, err := s.tip.Commit(changes, co)
	if err != nil || w.Commit.IsZero() {
		return "", nil, err
	}
	s.written = w
	return w.Commit.String(), w.Files, nil
}

// push pushes the commit written last (catalog.Tip.Push).
func (s *scope) push(ctx context.Context) error {
	_, err := s.tip.Push(ctx, s.written)
	return err
}

// withState returns changes (sorted by path) with the cluster's state file
// (gitops.StatePath) set to data, unless that is what the tip has.
func (s *scope) withState(changes []catalog.Change, data []byte) []catalog.Change {
	sp := gitops.StatePath(s.o.Cluster)
	out := make([]catalog.Change, 0, len(changes)+1)
	for _, c := range changes {
		if c.Path != sp {
			out = append(out, c)
		}
	}
	if s.oldState == nil || !bytes.Equal(s.oldState, data) {
		out = append(out, catalog.Change{Path: sp, Data: data})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// preview returns the plan's view of changes below rendered/<cluster>: the
// files that change (relative to the catalog) and their diff, with paths
// from the repo root as Git names them (below --catalog-path).
func (s *scope) preview(changes []catalog.Change) ([]gitops.FileChange, string, error) {
	prefix := render.RenderedDir + "/" + s.o.Cluster + "/"
	sub := strings.Trim(path.Clean("/"+filepath.ToSlash(s.o.Catalog.Path)), "/")
	repoPath := func(p string) string {
		if sub == "" {
			return p
		}
		return sub + "/" + p
	}
	before, after := render.Files{}, render.Files{}
	for _, c := range changes {
		if !strings.HasPrefix(c.Path, prefix) {
			continue
		}
		old, ok, err := s.tip.ReadFile(c.Path)
		if err != nil {
			return nil, "", err
		}
		if ok {
			before[repoPath(c.Path)] = old
		}
		if !c.Delete {
			after[repoPath(c.Path)] = c.Data
		}
	}
	files, patch, err := gitops.FileDiff(before, after)
	if err != nil {
		return nil, "", err
	}
	for i := range files {
		if sub != "" {
			files[i].Path = strings.TrimPrefix(files[i].Path, sub+"/")
		}
	}
	return files, patch, nil
}

// checkScanned stops a run before any registry is touched when a manifest
// file did not parse or a repo-wide rule fails: the files are linted (no
// registry access) and the findings returned as a *LintError.
func checkScanned(ctx context.Context, o Options, files []manifest.File, ms []*manifest.PackageManifest, scanErr error) error {
	if scanErr == nil && !hasErrors(lint.Repo(ms)) {
		return nil
	}
	all := model.NewVersions(ms)
	for _, v := range all {
		v.Changed = true // every finding counts
	}
	fs := lintStage(ctx, o.Lint, files, all)
	fs = append(fs, unreadFindings(scanErr, files)...)
	if hasErrors(fs) {
		return &InputError{Err: &LintError{Findings: fs}}
	}
	if scanErr != nil {
		return inputErr(scanErr)
	}
	return nil
}

// sourcePrefix returns the path of source relative to its Git worktree
// root ("" when source is the root), slash-separated, with a trailing '/'.
func sourcePrefix(source string) (string, error) {
	repo, err := git.PlainOpenWithOptions(source, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return "", err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", err
	}
	top, err := filepath.EvalSymlinks(wt.Filesystem.Root())
	if err != nil {
		return "", err
	}
	src, err := filepath.Abs(source)
	if err == nil {
		src, err = filepath.EvalSymlinks(src)
	}
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(top, src)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is not inside its Git worktree %s", source, top)
	}
	if rel == "." {
		return "", nil
	}
	return filepath.ToSlash(rel) + "/", nil
}

// dirtyManifests returns the manifest files below root (paths relative to
// source, slash-separated) that differ from the package repo's index, or
// that the index lacks: uncommitted edits and new files, which change
// detection (commits only) does not see. It does what Git's status does
// with its untracked cache, so that its cost is a stat per file and
// directory rather than a read of every directory: a tracked manifest
// whose size and modification time match its index entry is unchanged
// without reading it (the others are hashed), and a directory is listed
// only when it changed after the index was written (a new file or
// directory changes its parent's time), or is new. prefix is source's path
// in the worktree (sourcePrefix). suspect is the first path that the full
// scan would report instead of reading (manifest.Suspect: a directory or
// link named manifest.yaml, a manifest.yml), "" for none.
func dirtyManifests(source, prefix, root string) (dirty []string, suspect string, err error) {
	repo, err := git.PlainOpenWithOptions(source, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, "", err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, "", err
	}
	top := wt.Filesystem.Root()
	indexInfo, err := os.Stat(filepath.Join(top, ".git", "index"))
	if err != nil {
		return nil, "", err
	}
	idx, err := repo.Storer.Index()
	if err != nil {
		return nil, "", err
	}
	absSource, err := filepath.Abs(source)
	if err != nil {
		return nil, "", err
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, "", err
	}
	rootRel, err := filepath.Rel(absSource, absRoot)
	if err != nil {
		return nil, "", err
	}
	rootRel = filepath.ToSlash(rootRel)
	// rel is a path relative to source; below reports whether it is
	// inside root.
	below := func(rel string) bool {
		return rootRel == "." || rel == rootRel || strings.HasPrefix(rel, rootRel+"/")
	}
	tracked := map[string]bool{} // every tracked file below root
	dirs := map[string]bool{}    // their directories, root included
	check := func(rel string, hash plumbing.Hash, size uint32, mtime int64) error {
		info, err := os.Lstat(filepath.Join(absSource, filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed without a commit: the scan of recorded paths sees it
		}
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			if suspect == "" {
				suspect = rel
			}
			return nil
		}
		if uint32(info.Size()) == size && info.ModTime().UnixNano() == mtime {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(absSource, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		if plumbing.ComputeHash(plumbing.BlobObject, data) != hash {
			dirty = append(dirty, rel)
		}
		return nil
	}
	for _, e := range idx.Entries {
		rel, ok := strings.CutPrefix(e.Name, prefix)
		if !ok || !below(rel) {
			continue
		}
		tracked[rel] = true
		for d := path.Dir(rel); below(d) && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			if d == rootRel || d == "." {
				break
			}
		}
		if path.Base(rel) == manifest.FileName {
			if err := check(rel, e.Hash, e.Size, e.ModifiedAt.UnixNano()); err != nil {
				return nil, "", err
			}
		}
	}
	dirs[rootRel] = true
	// newEntry handles an entry of a listed directory that the index
	// lacks: a new file, or a new directory walked whole.
	newEntry := func(rel string, d fs.DirEntry) error {
		return filepath.WalkDir(filepath.Join(absSource, filepath.FromSlash(rel)), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			r, err := filepath.Rel(absSource, p)
			if err != nil {
				return err
			}
			r = filepath.ToSlash(r)
			switch {
			case d.IsDir() && d.Name() == ".git":
				return filepath.SkipDir
			case manifest.Suspect(d.Name(), d.Type()):
				if suspect == "" {
					suspect = r
				}
				return filepath.SkipDir
			case d.Type().IsRegular() && d.Name() == manifest.FileName:
				dirty = append(dirty, r)
			}
			return nil
		})
	}
	for _, d := range sortedKeys(dirs) {
		full := filepath.Join(absSource, filepath.FromSlash(d))
		info, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if !info.IsDir() || info.ModTime().Before(indexInfo.ModTime()) {
			continue // unchanged since the index was written: nothing new in it
		}
		des, err := os.ReadDir(full)
		if err != nil {
			return nil, "", err
		}
		for _, de := range des {
			rel := path.Join(d, de.Name())
			if d == "." {
				rel = de.Name()
			}
			if tracked[rel] || dirs[rel] {
				continue
			}
			if err := newEntry(rel, de); err != nil {
				return nil, "", err
			}
		}
	}
	sort.Strings(dirty)
	return dirty, suspect, nil
}

// scopedScan reads and parses the manifests of every artifact a change
// touches: the files changed since the base (dr) or since the published
// state (since), the uncommitted ones (dirty), and the other versions of
// their artifacts, which the state records by path. Manifest paths are
// relative to source; diff paths to the worktree root, below prefix. A
// recorded file that is gone or not a regular file makes the incremental
// way inapplicable (*catalog.FullReadRequiredError).
func scopedScan(source, prefix string, idx *gitops.StateIndex, dr, since *diff.Result, dirty []string) ([]manifest.File, []*manifest.PackageManifest, error, map[string]bool, error) {
	rel := func(p string) (string, bool) { return strings.CutPrefix(p, prefix) }
	gone := map[string]bool{}
	want := map[string]bool{}
	for _, p := range dirty {
		want[p] = true
	}
	for _, r := range []*diff.Result{dr, since} {
		for _, c := range r.Changes {
			if c.Kind == diff.Removed {
				if p, ok := rel(c.Path); ok {
					gone[p] = true
				}
				continue
			}
			if c.OldPath != "" && c.OldPath != c.Path {
				if p, ok := rel(c.OldPath); ok {
					gone[p] = true
				}
			}
			if p, ok := rel(c.Path); ok {
				want[p] = true
			}
		}
		for _, inv := range r.Invalid {
			if p, ok := rel(inv); ok {
				want[p] = true
			}
		}
	}
	// The published versions of an artifact, by path.
	published := func(name string) ([]string, error) {
		a, ok, err := idx.Artifact(name)
		if err != nil {
			return nil, catalog.FullReadRequired("%v", err)
		}
		if !ok || !a.Present {
			return nil, nil
		}
		var out []string
		for _, v := range a.Versions {
			if !v.Present || gone[v.Path] {
				continue
			}
			if v.Path == "" {
				return nil, catalog.FullReadRequired("%s does not record manifest paths (written by an older publish)", idx.Path)
			}
			out = append(out, v.Path)
		}
		return out, nil
	}
	touched := map[string]bool{}
	for _, r := range []*diff.Result{dr, since} {
		for _, c := range r.Changes {
			touched[c.Artifact] = true
		}
	}
	for a := range touched {
		ps, err := published(a)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		for _, p := range ps {
			want[p] = true
		}
	}
	read := map[string]bool{}
	var files []manifest.File
	var ms []*manifest.PackageManifest
	var errs []error
	for len(want) > 0 {
		paths := make([]string, 0, len(want))
		for p := range want {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		want = map[string]bool{}
		for _, p := range paths {
			if read[p] {
				continue
			}
			read[p] = true
			full := filepath.Join(source, filepath.FromSlash(p))
			st, err := os.Lstat(full)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil, nil, nil, nil, catalog.FullReadRequired("%s is recorded in %s but gone without a change in the package repo's history", p, idx.Path)
				}
				return nil, nil, nil, nil, err
			}
			if !st.Mode().IsRegular() {
				return nil, nil, nil, nil, catalog.FullReadRequired("%s is not a regular file", p)
			}
			data, err := manifest.ReadFile(full, p)
			if err != nil {
				errs = append(errs, err) // too large: a finding, as in the full scan
				continue
			}
			files = append(files, manifest.File{Path: p, Data: data})
			m, err := manifest.Parse(p, data)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			ms = append(ms, m)
			// A version moved into another artifact brings that
			// artifact's versions in too.
			if !touched[m.Artifact] {
				touched[m.Artifact] = true
				ps, err := published(m.Artifact)
				if err != nil {
					return nil, nil, nil, nil, err
				}
				for _, q := range ps {
					want[q] = true
				}
			}
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	manifest.Sort(ms)
	return files, ms, errors.Join(errs...), touched, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writeFiles writes files (catalog paths) below root, never through a
// symbolic link nor outside root (checkout.WriteFiles).
func writeFiles(root string, files map[string][]byte) error {
	return checkout.WriteFiles(root, files)
}

// dirFiles reads every regular file below root, by slash-separated path
// relative to root (symbolic links and .git skipped, as catalog.Dir does).
func dirFiles(root string) (map[string][]byte, error) {
	d, err := catalog.OpenDir(root)
	if err != nil {
		return nil, err
	}
	return d.Files("", nil)
}
