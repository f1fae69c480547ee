// Package pipeline wires the stages of `publish run` and `publish render`
// (DESIGN.md §3): scan, check, fetch bundles, mirror, render, commit, push.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/crdcheck"
	"github.com/operator-publish/publish/internal/diff"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/render"
	"sigs.k8s.io/yaml"
)

// InputError is a problem the user must fix in the package repo, the
// catalog's overlays or the flags (exit code 1). Everything else that fails
// is an infrastructure error (exit code 2).
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(err error) error {
	if err == nil {
		return nil
	}
	return &InputError{Err: err}
}

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
	// Lint configures the lint rules (publish.yaml).
	Lint lint.Config
	// AllowEmpty lets a source without any manifest delist every artifact.
	AllowEmpty bool
	// Base is an explicit base revision for change detection (--base);
	// default: the source commit recorded in publish/state.yaml.
	Base string
	// NoFetch forbids change detection to deepen a shallow clone or fetch a
	// missing base from the package repo's origin.
	NoFetch bool
	// CommitTemplate, when set, writes the catalog commit message
	// (ParseCommitTemplate; CommitData); nil: CommitMessage.
	CommitTemplate *template.Template
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Target is what the cluster runs: TargetAlauda ("" too) or TargetOLM
	// (olm.go); OLM configures the latter.
	Target string
	OLM    OLMOptions
	olm    *olmRun
	// SourceCommitOverride and SourceRepoOverride, when set, are recorded as
	// the source of the publish instead of Source's Git HEAD and origin
	// (push --catalog: the commit the archive was packaged from).
	SourceCommitOverride, SourceRepoOverride string
}

// Result is what a run did.
type Result struct {
	SourceCommit string
	Manifests    int
	BundlesRead  int // bundles read and mirrored: the changed versions
	Findings     []lint.Finding
	Diff         *diff.Result
	Mirror       *mirror.Report
	Changes      render.Changes
	Commit       string // catalog commit, "" when nothing changed
	Files        []string
	// Superseded is the source commit of a catalog that was already
	// published from a newer commit than ours: nothing was committed.
	Superseded string
}

func (o *Options) defaults() {
	if o.Source == "" {
		o.Source = "."
	}
	if o.PackagesDir == "" {
		o.PackagesDir = "packages"
	}
	if o.Cluster == "" {
		o.Cluster = "global"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Catalog.Branch == "" {
		o.Catalog.Branch = "main"
	}
}

func (o *Options) logf(format string, args ...any) {
	fmt.Fprintf(o.Log, format+"\n", args...)
}

// packagesRoot is --packages-dir resolved against --source.
func packagesRoot(source, packagesDir string) string {
	if filepath.IsAbs(packagesDir) {
		return packagesDir
	}
	return filepath.Join(source, packagesDir)
}

// scanAndLint reads every manifest file and parses the PackageManifests.
// When a file does not parse or a repo-wide rule fails, it lints the files
// (no registry access yet) and returns a *LintError: the run stops before
// touching the catalog or a registry.
func scanAndLint(ctx context.Context, o Options) ([]manifest.File, []*manifest.PackageManifest, error) {
	root := packagesRoot(o.Source, o.PackagesDir)
	files, ms, scanErr := manifest.ScanFiles(o.Source, root)
	if ms == nil && scanErr != nil && !errors.As(scanErr, new(*manifest.Error)) {
		return nil, nil, inputErr(scanErr) // the directory itself is missing
	}
	if scanErr == nil && !hasErrors(lint.Repo(ms)) {
		return files, ms, nil
	}
	fs := lintStage(ctx, o.Lint, files, ms, make([]*bundle.Bundle, len(ms)), nil, nil)
	fs = append(fs, unreadFindings(scanErr, files)...)
	if hasErrors(fs) {
		return nil, nil, &InputError{Err: &LintError{Findings: fs}}
	}
	if scanErr != nil {
		return nil, nil, inputErr(scanErr)
	}
	return files, ms, nil
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

// SourceCommit returns the HEAD commit of the Git repo containing dir and its
// origin URL ("" for both when dir is not in a Git repo).
func SourceCommit(dir string) (commit, origin string) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return "", ""
	}
	if h, err := repo.Head(); err == nil {
		commit = h.Hash().String()
	}
	if r, err := repo.Remote("origin"); err == nil && len(r.Config().URLs) > 0 {
		origin = redactURL(r.Config().URLs[0])
	}
	return commit, origin
}

func redactURL(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		if at := strings.Index(u[i+3:], "@"); at >= 0 {
			return u[:i+3] + u[i+3+at+1:]
		}
	}
	return u
}

// Run is `publish run`: the whole pipeline. Nothing is committed unless
// every image was mirrored and the catalog rendered; no bundle is mirrored
// unless every related image was.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.defaults()
	res := &Result{}
	if err := o.checkTarget(); err != nil {
		return nil, err
	}
	files, ms, err := scanAndLint(ctx, o)
	if err != nil {
		return nil, err
	}
	res.Manifests = len(ms)
	o.logf("scan: %d package manifests in %s", len(ms), filepath.Join(o.Source, o.PackagesDir))
	res.SourceCommit, _ = SourceCommit(o.Source)

	if o.Mirror.SrcHosts == nil {
		o.Mirror.SrcHosts = sourceHosts(ms)
	}
	if o.Mirror.Logger == nil {
		o.Mirror.Logger = registry.LineLogger(o.Log) // retries, requests that wait
	}
	mc, err := mirror.New(o.Mirror)
	if err != nil {
		return nil, inputErr(err)
	}
	if mc.DstHost() == "" {
		return nil, inputErr(errors.New("no destination registry: set --dst-registry HOST[:PORT][/PREFIX]"))
	}

	repo, state, err := openCatalog(ctx, o)
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	if o.Changed == nil {
		dr, err := diff.Compute(ctx, diff.Options{
			Repo: o.Source, PackagesDir: o.PackagesDir, Base: o.Base,
			StateCommit: state.Source.Commit, Fetch: !o.NoFetch, Log: o.Log,
		})
		if err != nil {
			o.logf("warning: change detection failed (%v): every version counts as changed", err)
		} else {
			res.Diff = dr
			o.Changed = dr.Changed
			o.logf("changes: %d added, %d modified, %d removed since %s (%s)", dr.Count(diff.Added), dr.Count(diff.Modified), dr.Count(diff.Removed), shortOr(dr.Base, "the beginning"), dr.BaseFrom)
		}
	}
	if len(ms) == 0 && !o.AllowEmpty {
		if n := presentArtifacts(state.Artifacts); n > 0 {
			return nil, inputErr(fmt.Errorf("no PackageManifest found under %s, but the catalog lists %d artifacts: publishing would delist all of them. Check --source and --packages-dir; if delisting everything is what you want, pass --allow-empty", filepath.Join(o.Source, o.PackagesDir), n))
		}
	}
	work := o.workSet(ms, files, state.Artifacts)
	bundles, byErr, err := readBundles(ctx, mc, ms, work)
	if err != nil {
		return nil, err
	}
	res.Findings = lintStage(ctx, o.Lint, files, ms, bundles, byErr, work)
	res.Findings = append(res.Findings, editedInPlace(o.Lint, res.Diff, ms, state.Artifacts)...)
	if hasErrors(res.Findings) {
		return res, &InputError{Err: &LintError{Findings: res.Findings}}
	}
	for _, f := range res.Findings {
		o.logf("lint: %s", f)
	}
	res.BundlesRead = count(work)
	if res.BundlesRead == len(ms) {
		o.logf("bundles: %d read", len(ms))
	} else {
		o.logf("bundles: %d of %d read (the others are unchanged since the last publish)", res.BundlesRead, len(ms))
	}

	if err := o.prepareOLM(ctx, mc, ms, bundles, work, state); err != nil {
		return res, err
	}
	related, bundleRefs := o.olmTargets(), []mirror.Target(nil)
	for i, m := range ms {
		if !work[i] {
			continue
		}
		for _, r := range append(append([]string(nil), m.Spec.RelatedImages...), bundles[i].Images...) {
			related = append(related, mirror.Target{Ref: r})
		}
		// The bundle carries the ArtifactVersion's tag at the destination,
		// also when spec.artifact pins it by digest.
		bundleRefs = append(bundleRefs, mirror.Target{Ref: m.Spec.Artifact, Tag: m.Tag()})
	}
	if len(bundleRefs) > 0 {
		if err := mc.CheckDestination(bundleRefs[0].Ref); err != nil {
			return res, fmt.Errorf("nothing mirrored, nothing committed: %w", err)
		}
	}
	rep, err := mc.MirrorTargets(ctx, related, bundleRefs)
	res.Mirror = rep
	if err != nil {
		return res, mirrorErr(annotateImageErrors(err, namedBy(ms, bundles)))
	}
	o.logf("mirror: %d images, %d copied, %d already at %s", len(rep.Images), rep.Copied(), len(rep.Images)-rep.Copied(), o.Mirror.DstRegistry)

	current, err := Artifacts(mc, ms, bundles, rep)
	if err != nil {
		return res, inputErr(err)
	}
	carryOver(current, state.Artifacts, false)
	return res, publishWithRetry(ctx, o, repo, state, current, res)
}

// namedBy maps each image reference to the manifest lines that make the run
// mirror it: a spec.relatedImages entry, or the spec.artifact line of a
// bundle whose CSV deploys it.
func namedBy(ms []*manifest.PackageManifest, bundles []*bundle.Bundle) map[string][]string {
	out := map[string][]string{}
	add := func(ref, where string) {
		for _, w := range out[ref] {
			if w == where {
				return
			}
		}
		out[ref] = append(out[ref], where)
	}
	for i, m := range ms {
		for j, r := range m.Spec.RelatedImages {
			add(r, fmt.Sprintf("%s:%d (spec.relatedImages)", m.Path, m.Lines[fmt.Sprintf("spec.relatedImages.%d", j)]))
		}
		if i < len(bundles) && bundles[i] != nil {
			for _, r := range bundles[i].Images {
				add(r, fmt.Sprintf("%s:%d (deployed by the bundle's CSV)", m.Path, m.Lines["spec.artifact"]))
			}
		}
		add(m.Spec.Artifact, fmt.Sprintf("%s:%d (spec.artifact)", m.Path, m.Lines["spec.artifact"]))
	}
	return out
}

// annotateImageErrors appends to each *mirror.ImageError the manifest lines
// that name its image, so the user knows which file to fix.
func annotateImageErrors(err error, named map[string][]string) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		var ie *mirror.ImageError
		if errors.As(e, &ie) && len(named[ie.Ref]) > 0 {
			where := named[ie.Ref]
			if len(where) > 3 {
				where = append(where[:3:3], fmt.Sprintf("and %d more", len(named[ie.Ref])-3))
			}
			e = &mirror.ImageError{Ref: ie.Ref, Input: ie.Input, Err: fmt.Errorf("%w; named by %s", ie.Err, strings.Join(where, ", "))}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// mirrorErr is an *InputError when every image failed for a reason only
// the package repo can fix (a reference that does not exist), else an
// infrastructure error.
func mirrorErr(err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	input := true
	for _, e := range errs {
		var ie *mirror.ImageError
		if !errors.As(e, &ie) || !ie.Input {
			input = false
		}
	}
	wrapped := fmt.Errorf("mirror failed, nothing committed:\n%w", err)
	if input {
		return &InputError{Err: wrapped}
	}
	return wrapped
}

// sourceHosts returns the registries the manifests name (spec.artifact and
// spec.relatedImages): the only ones that get the source credentials.
func sourceHosts(ms []*manifest.PackageManifest) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for _, ref := range append([]string{m.Spec.Artifact}, m.Spec.RelatedImages...) {
			if r, err := name.ParseReference(ref); err == nil {
				set[r.Context().RegistryStr()] = true
			}
		}
	}
	hosts := make([]string, 0, len(set))
	for h := range set {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	return hosts
}

func presentArtifacts(arts []render.Artifact) (n int) {
	for _, a := range arts {
		if a.Present {
			n++
		}
	}
	return n
}

// selectWork marks the manifests whose bundles must be read and mirrored:
// those changed is true for, and those publish/state.yaml has no mirrored
// record of (never published, or published before digests were recorded).
func selectWork(ms []*manifest.PackageManifest, state []render.Artifact, changed func(a, v string) bool) []bool {
	known := map[[3]string]bool{}
	for _, a := range state {
		for _, v := range a.Versions {
			if v.Present && a.Present && v.BundleDigest != "" {
				known[[3]string{a.Name, v.Version, v.Tag}] = true
			}
		}
	}
	work := make([]bool, len(ms))
	for i, m := range ms {
		v := m.Version.String()
		work[i] = changed == nil || changed(m.Artifact, v) || !known[[3]string{m.Artifact, v, m.Tag()}]
	}
	return work
}

func count(bs []bool) (n int) {
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// carryOver fills what current lacks from the previous state: display name
// and description of an artifact, bundle digest and mirrored images of a
// version (same tag) that was not read in this run. With mapping, the
// registry and repository of known artifacts come from the state too (used
// when no destination registry is given).
func carryOver(current, previous []render.Artifact, mapping bool) {
	prev := map[string]render.Artifact{}
	for _, a := range previous {
		prev[a.Name] = a
	}
	for i := range current {
		p, ok := prev[current[i].Name]
		if !ok {
			continue
		}
		if mapping {
			current[i].Registry, current[i].Repository = p.Registry, p.Repository
		}
		if current[i].DisplayName == "" {
			current[i].DisplayName = p.DisplayName
		}
		if current[i].Description == "" {
			current[i].Description = p.Description
		}
		old := map[string]render.Version{}
		for _, v := range p.Versions {
			old[v.Tag] = v
		}
		for j, v := range current[i].Versions {
			if ov, ok := old[v.Tag]; ok && v.BundleDigest == "" {
				current[i].Versions[j].BundleDigest, current[i].Versions[j].Images = ov.BundleDigest, ov.Images
			}
		}
	}
}

func sortErrs(errs []error) {
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
}

// Artifacts builds the published artifacts from the manifests (sorted by
// manifest.Sort), their bundles (same order; nil entries allowed when
// bundles were not read) and the mirror report (nil when nothing was
// mirrored). Display name and description come from the newest version's
// manifest info, else from its CSV.
func Artifacts(mc *mirror.Client, ms []*manifest.PackageManifest, bundles []*bundle.Bundle, rep *mirror.Report) ([]render.Artifact, error) {
	digests := map[string]mirror.Result{}
	if rep != nil {
		for _, r := range rep.Images {
			digests[r.Source] = r
		}
	}
	byName := map[string]*render.Artifact{}
	var order []string
	for i, m := range ms {
		ref, err := mc.ParseReference(m.Spec.Artifact)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", m.Path, m.Lines["spec.artifact"], err)
		}
		a, ok := byName[m.Artifact]
		if !ok {
			a = &render.Artifact{Name: m.Artifact, Registry: mc.DstHost(), Repository: mc.DestinationRepository(ref)}
			byName[m.Artifact] = a
			order = append(order, m.Artifact)
		}
		// ms is sorted by version: the last one wins.
		var b *bundle.Bundle
		if i < len(bundles) {
			b = bundles[i]
		}
		a.DisplayName = m.Spec.Info.DisplayName
		a.Description = m.Spec.Info.Description
		if b != nil {
			if a.DisplayName == "" {
				a.DisplayName = b.DisplayName
			}
			if a.Description == "" {
				a.Description = b.Description
			}
		}
		v := render.Version{Version: m.Version.String(), Tag: m.Tag(), Present: true, Path: m.Path}
		if r, ok := digests[m.Spec.Artifact]; ok {
			v.BundleDigest = r.Digest
		}
		imgs := append([]string(nil), m.Spec.RelatedImages...)
		if b != nil {
			imgs = append(imgs, b.Images...)
		}
		seen := map[string]bool{}
		for _, img := range imgs {
			if r, ok := digests[img]; ok && !seen[img] {
				seen[img] = true
				v.Images = append(v.Images, render.Image{Source: r.Source, Destination: r.Destination, Digest: r.Digest})
			}
		}
		sort.Slice(v.Images, func(i, j int) bool { return v.Images[i].Source < v.Images[j].Source })
		a.Versions = append(a.Versions, v)
	}
	out := make([]render.Artifact, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	render.Sort(out)
	return out, nil
}

// updatedVersions lists "<artifact> <version>" for every version change
// detection saw modified that was published before and still is.
func updatedVersions(dr *diff.Result, prev, next []render.Artifact) []string {
	if dr == nil || dr.All {
		return nil
	}
	present := func(arts []render.Artifact) map[[2]string]bool {
		m := map[[2]string]bool{}
		for _, a := range arts {
			for _, v := range a.Versions {
				if a.Present && v.Present {
					m[[2]string{a.Name, v.Version}] = true
				}
			}
		}
		return m
	}
	before, after := present(prev), present(next)
	var out []string
	for _, c := range dr.Changes {
		k := [2]string{c.Artifact, strings.TrimPrefix(c.Version, "v")}
		if c.Kind == diff.Modified && before[k] && after[k] {
			out = append(out, k[0]+" "+k[1])
		}
	}
	return out
}

// openCatalog clones the catalog, reads its state, seeds a first publish
// from the template and checks the cluster overlay, before any time is
// spent on registries. The caller closes the clone.
func openCatalog(ctx context.Context, o Options) (*gitops.Repo, *gitops.State, error) {
	repo, err := gitops.Clone(ctx, o.Catalog)
	if err != nil {
		return nil, nil, err
	}
	if repo.NewBranch {
		o.logf("catalog: branch %s does not exist in %s yet: it will be created from the template (check --catalog-branch if that is not what you want)", o.Catalog.Branch, o.Catalog.URL)
	}
	state, err := prepareCatalog(repo, o)
	if err != nil {
		repo.Close()
		return nil, nil, err
	}
	return repo, state, nil
}

// prepareCatalog reads the state of a fresh clone (or one just reset to
// the branch tip), seeds a first publish from the template and checks the
// cluster overlay.
func prepareCatalog(repo *gitops.Repo, o Options) (*gitops.State, error) {
	state, err := gitops.ReadState(repo.Dir)
	if err == nil && (repo.Empty || len(state.Artifacts) == 0) {
		// First publish: add the template's files that the repo lacks.
		err = repo.Seed(publish.CatalogTemplate, "catalog-repo-template")
	} else if err != nil {
		err = inputErr(err)
	}
	if err == nil && o.Target != TargetOLM {
		if oerr := render.CheckOverlay(repo.Dir, o.Cluster); oerr != nil {
			err = inputErr(oerr)
		}
	}
	if err != nil {
		return nil, err
	}
	return state, nil
}

// workSet marks the versions to read, lint and mirror: changed since the
// base, unknown to the state, or edited on disk without a commit.
func (o *Options) workSet(ms []*manifest.PackageManifest, files []manifest.File, state []render.Artifact) []bool {
	work := selectWork(ms, state, o.Changed)
	if dirty := dirtyFiles(o.Source, files); len(dirty) > 0 {
		o.logf("warning: %d manifest files differ from the package repo's HEAD (uncommitted changes): they are published as they are on disk, but the catalog commit names HEAD", len(dirty))
		for i, m := range ms {
			if dirty[m.Path] {
				work[i] = true
			}
		}
	}
	return work
}

// pushAttempts bounds how often a rejected push is tried in all.
const pushAttempts = 6

// retryDelay is the wait before attempt n+1 (n >= 1): exponential backoff
// from 250 ms, capped at 4 s, with full jitter so that two runs that
// collided do not collide again in lockstep.
func retryDelay(n int) time.Duration {
	base := 250 * time.Millisecond << min(n-1, 4)
	return base/2 + time.Duration(rand.Int64N(int64(base)))
}

// publishWithRetry publishes and, when the push is rejected because the
// catalog branch moved on (gitops.IsRejected: go-git's non-fast-forward
// update, "fetch first", "cannot lock ref", GitLab's "incorrect old value
// provided"), fetches the branch, resets the clone hard to its tip, renders
// again on top of the new state and pushes again, with backoff and jitter,
// at most pushAttempts times. Before every attempt it compares the source
// commit of the catalog with ours by ancestry in the package repo: when the
// catalog was published from a newer commit, it stops with nothing to do, so
// an older run never overwrites a newer catalog (no lost update).
func publishWithRetry(ctx context.Context, o Options, repo *gitops.Repo, state *gitops.State, current []render.Artifact, res *Result) error {
	for attempt := 1; ; attempt++ {
		if newer, why := supersededBy(ctx, o, res.SourceCommit, state.Source.Commit); newer {
			o.logf("catalog: %s; nothing to do", why)
			res.Changes, res.Commit, res.Files = render.Changes{}, "", nil
			res.Superseded = state.Source.Commit
			return nil
		}
		err := publishCatalog(ctx, o, repo, state, current, res)
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
		if err := repo.Refresh(ctx); err != nil {
			return err
		}
		if state, err = prepareCatalog(repo, o); err != nil {
			return err
		}
	}
}

// supersededBy reports whether the catalog, published from source commit
// theirs, is ahead of our source commit ours: ours is a proper ancestor of
// theirs. A commit the checkout lacks is fetched from the package repo's
// origin first (unless --no-fetch); when it is still unknown, a complete
// history means theirs is not behind ours (newer, or on another line:
// nothing to overwrite), while a shallow clone, or a run with an explicit
// --base, publishes with a warning.
func supersededBy(ctx context.Context, o Options, ours, theirs string) (bool, string) {
	if ours == "" || theirs == "" || ours == theirs {
		return false, ""
	}
	repo, err := git.PlainOpenWithOptions(o.Source, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return false, ""
	}
	oc, err := repo.CommitObject(plumbing.NewHash(ours))
	if err != nil {
		return false, ""
	}
	th := plumbing.NewHash(theirs)
	tc, err := repo.CommitObject(th)
	if err != nil && !o.NoFetch {
		if ferr := fetchCommit(ctx, repo, th); ferr == nil {
			tc, err = repo.CommitObject(th)
		}
	}
	if err != nil {
		if shallow, _ := repo.Storer.Shallow(); len(shallow) > 0 || o.Base != "" {
			o.logf("warning: the catalog was published from source commit %s, which this clone does not have: cannot tell whether it is newer; publishing %s", short(theirs), short(ours))
			return false, ""
		}
		return true, fmt.Sprintf("the catalog was published from source commit %s, which is not in the history of %s (it is newer, or on another line; if the package repo's history was rewritten, publish once with --base to overwrite it)", short(theirs), short(ours))
	}
	if ok, err := oc.IsAncestor(tc); err == nil && ok {
		return true, fmt.Sprintf("the catalog was published from source commit %s, which already contains %s", short(theirs), short(ours))
	}
	return false, ""
}

// fetchCommit fetches one commit by hash from the package repo's origin
// (servers that allow it: GitHub, GitLab, git over protocol v2), under a
// timeout, into a temporary ref that is removed again.
func fetchCommit(ctx context.Context, repo *git.Repository, h plumbing.Hash) error {
	if _, err := repo.Remote("origin"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tmp := plumbing.ReferenceName("refs/publish/superseded")
	err := repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: "origin",
		RefSpecs:   []config.RefSpec{config.RefSpec(h.String() + ":" + tmp.String())},
		Tags:       git.NoTags,
	})
	_ = repo.Storer.RemoveReference(tmp)
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}

func shortOr(h, none string) string {
	if h == "" {
		return none
	}
	return short(h)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// publishCatalog renders into the clone, commits when a byte changed, and
// pushes.
func publishCatalog(ctx context.Context, o Options, repo *gitops.Repo, state *gitops.State, current []render.Artifact, res *Result) error {
	next := render.Merge(state.Artifacts, current)
	res.Changes = render.Diff(state.Artifacts, next)
	res.Changes.Updated = updatedVersions(res.Diff, state.Artifacts, next)
	o.logf("render: %s/%s", render.RenderedDir, o.Cluster)
	key, err := o.renderCluster(ctx, repo.Dir, next, state.Rendered[o.Cluster])
	if err != nil {
		return err
	}
	rendered := map[string]string{}
	for c, k := range state.Rendered {
		rendered[c] = k
	}
	rendered[o.Cluster] = key
	files, err := repo.ChangedFiles()
	if err != nil {
		return err
	}
	commit, origin := o.sourceCommit()
	if len(files) == 0 && sameArtifacts(state.Artifacts, next) && state.Rendered[o.Cluster] == key {
		o.logf("catalog: nothing changed, no commit")
		return nil
	}
	newState := &gitops.State{Source: gitops.Source{Repo: origin, Commit: commit}, Artifacts: next, Rendered: rendered}
	data, err := newState.Marshal()
	if err != nil {
		return err
	}
	if err := render.Write(repo.Dir, nil, render.Files{gitops.StatePath: data}); err != nil {
		return err
	}
	if res.Files, err = repo.ChangedFiles(); err != nil {
		return err
	}
	sort.Strings(res.Files)
	o.logf("catalog: committing %d files", len(res.Files))
	msg, err := commitMessage(o.CommitTemplate, res.Changes, commit, origin)
	if err != nil {
		return inputErr(err)
	}
	hash, err := repo.Commit(msg, time.Now())
	if err != nil {
		return err
	}
	if hash == "" {
		return nil
	}
	o.logf("catalog: pushing %s to %s", hash[:12], o.Catalog.Branch)
	if err := repo.Push(ctx); err != nil {
		return err
	}
	res.Commit = hash
	o.logf("catalog: committed %s and pushed to %s (%d files)", hash[:12], o.Catalog.Branch, len(res.Files))
	return nil
}

func sameArtifacts(a, b []render.Artifact) bool {
	x, _ := (&gitops.State{Artifacts: a}).Marshal()
	y, _ := (&gitops.State{Artifacts: b}).Marshal()
	return string(x) == string(y)
}

// RenderInto writes publish/generated and rendered/<cluster> for arts (the
// merged list, tombstones included) into the catalog working tree at root,
// and returns the render key (render.Key) to record in the state.
//
// When prevKey, the key recorded when rendered/<cluster> was last written,
// equals the current key (same overlays, same configuration), only the
// artifacts whose generated objects changed are rendered again; the other
// files of rendered/<cluster> stay as they are. Otherwise everything is
// rendered. Errors from the overlay are *InputError.
func RenderInto(root, cluster string, cfg render.Config, arts []render.Artifact, prevKey string) (string, error) {
	gen, err := render.Generated(cfg, arts)
	if err != nil {
		return "", inputErr(err)
	}
	key, err := render.Key(root, cluster, cfg)
	if err != nil {
		return "", err
	}
	var only map[string]bool
	if _, statErr := os.Stat(filepath.Join(root, render.RenderedDir, cluster)); prevKey != "" && prevKey == key && statErr == nil {
		if only, err = render.ChangedArtifacts(root, gen); err != nil {
			return "", err
		}
	}
	if err := render.Write(root, []string{render.GeneratedDir}, gen); err != nil {
		return "", err
	}
	if only != nil && len(only) == 0 {
		return key, nil // nothing to render again
	}
	out, err := render.BuildOnly(root, cluster, only)
	if err != nil {
		return "", inputErr(err)
	}
	if err := validateRendered(cluster, out); err != nil {
		return "", inputErr(err)
	}
	dirs := []string{render.RenderedDir + "/" + cluster}
	if only != nil {
		dirs = dirs[:0]
		for art := range only {
			dirs = append(dirs, render.RenderedDir+"/"+cluster+"/"+art)
		}
		sort.Strings(dirs)
	}
	return key, render.Write(root, dirs, out)
}

// validateRendered checks every rendered Artifact, ArtifactVersion and
// Library against the CRDs built into the binary, so that an overlay patch
// cannot commit an object the API server would reject (or silently prune).
func validateRendered(cluster string, files render.Files) error {
	v, err := crdcheck.Alauda()
	if err != nil {
		return err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var errs []error
	for _, p := range paths {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(files[p], &head); err != nil || !v.Knows(head.APIVersion, head.Kind) {
			continue
		}
		if err := v.Validate(files[p]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("the overlay kustomize/clusters/%s renders objects the CRDs reject (nothing committed):\n%w", cluster, errors.Join(errs...))
	}
	return nil
}

// CommitMessage is the catalog commit message: a subject counting the
// changes, one section per kind of change, and Source-Commit /
// Source-Repo trailers.
func CommitMessage(ch render.Changes, sourceCommit, sourceRepo string) string {
	var parts []string
	for _, p := range []struct {
		n    int
		verb string
	}{{len(ch.Listed), "list"}, {len(ch.Upgraded), "upgrade"}, {len(ch.Relisted), "relist"}, {len(ch.Delisted), "delist"}, {len(ch.Updated), "update"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", p.verb, p.n))
		}
	}
	subject := "publish: update catalog (no listing changes)"
	if len(parts) > 0 {
		subject = "publish: " + strings.Join(parts, ", ")
	}
	var b strings.Builder
	b.WriteString(subject + "\n")
	for _, s := range []struct {
		title string
		items []string
	}{{"Listed", ch.Listed}, {"Upgraded", ch.Upgraded}, {"Relisted", ch.Relisted}, {"Delisted", ch.Delisted}, {"Updated in place", ch.Updated}} {
		if len(s.items) == 0 {
			continue
		}
		b.WriteString("\n" + s.title + ":\n")
		for _, it := range s.items {
			b.WriteString("- " + it + "\n")
		}
	}
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
