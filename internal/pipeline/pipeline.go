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
	"errors"
	"fmt"
	"log/slog"
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
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/checkout"
	"github.com/operator-publish/publish/internal/diff"
	"github.com/operator-publish/publish/internal/forge"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/ocicatalog"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/render"
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
	// Lint configures the lint rules (publish.yaml).
	Lint lint.Config
	// Verify checks the signatures of every bundle and related image read
	// before anything is mirrored (publish.yaml verify; internal/verify);
	// nil: nothing is verified.
	Verify ImageVerifier
	// Sign, when set, signs the OCI catalog artifact after it is pushed
	// (--cosign-key; docs/signatures.md), and when the tag already pointed
	// at it, if the digest has no Sigstore bundle referrer yet.
	Sign ImageSigner
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
	// Log receives progress lines ("<stage>: ...") at level Info and
	// warnings at level Warn; nil discards them.
	Log *slog.Logger
	// Target names what the cluster runs (internal/target: "alauda", the
	// default, or "olm"); OLM configures the olm target.
	Target string
	OLM    OLMOptions
	// OCI, when set, is the OCI catalog reference of the cluster
	// (REGISTRY/REPOSITORY[:TAG], default tag the cluster; --oci, or
	// publish.yaml clusters.<cluster>.oci): rendered/<cluster> of the new
	// catalog is pushed there as a single-layer OCI artifact
	// (internal/ocicatalog) before the catalog commit, and its digest
	// recorded in publish/state.yaml.
	OCI string
	// SourceCommitOverride and SourceRepoOverride, when set, are recorded as
	// the source of the publish instead of Source's Git HEAD and origin
	// (push --catalog: the commit the archive was packaged from).
	SourceCommitOverride, SourceRepoOverride string
	// Clusters, when set, are the clusters the run serves, each with its
	// settings (publish run with no --cluster: every cluster of
	// publish.yaml); Cluster, Target, OLM, OCI and Render are then not
	// used. Empty: the one cluster those fields describe. `publish run`
	// makes one commit for all of them.
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
	// fullRead makes the engine read the whole package repo and catalog
	// even where the incremental way applies: the equivalence tests.
	fullRead bool
	// cluster is the cluster of a run of several (forCluster), and
	// runClusters the names of all of them.
	cluster     ClusterOptions
	runClusters []string
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
	// target renders rendered/<cluster>; it keeps what it prepared.
	target target.Target
	// dstOpts, when set, are the remote options for the destination
	// registry instead of mc's (push --no-auth).
	dstOpts []remote.Option
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
	// Clusters is what the run did on each cluster, in the order served.
	// With one cluster the fields above are that cluster's; with several,
	// Changes merges every cluster's and Commit is the one commit.
	Clusters []ClusterResult
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

// prepareCluster reads, lints and mirrors what one cluster of a run
// needs (o is forCluster's), on the catalog tip shared by the run's
// clusters: everything before the render and the commit. The clusterRun
// is returned with its result also when an error stops it.
func prepareCluster(ctx context.Context, o Options, tgt target.Target, tip *catalog.Tip, sh *shared) (*clusterRun, error) {
	res := &Result{}
	s, err := openScopeOn(ctx, o, scopeOptions{}, tgt, tip)
	if err != nil {
		return nil, err
	}
	cr := &clusterRun{s: s, res: res, cres: &ClusterResult{Name: o.Cluster}}
	files, vs, state := s.files, s.vs, s.state
	res.Manifests = len(vs)
	if s.full {
		o.logf("scan: %d package manifests in %s", len(vs), filepath.Join(o.Source, o.PackagesDir))
	} else {
		o.logf("scan: %d package manifests of the %d artifacts the change touches (the others stay as published)", len(vs), len(s.touched))
	}
	res.SourceCommit, _ = SourceCommit(o.Source)

	r := &run{Options: o, changed: o.Changed, target: tgt, mc: s.mc}
	cr.r = r
	switch {
	case s.diffErr != nil:
		o.warnf("change detection failed (%v): every version counts as changed", s.diffErr)
	case s.diff != nil:
		dr := s.diff
		res.Diff, r.diff, r.changed = dr, dr, dr.Changed
		if !dr.All { // else change detection said why every version counts
			o.logf("changes: %d added, %d modified, %d removed since %s (%s)", dr.Count(diff.Added), dr.Count(diff.Modified), dr.Count(diff.Removed), shortOr(dr.Base, "the beginning"), dr.BaseFrom)
		}
	}
	if len(vs) == 0 && !o.AllowEmpty && s.coversAll() {
		if n := presentArtifacts(state.Artifacts); n > 0 {
			return cr, inputErr(fmt.Errorf("no PackageManifest found under %s, but the catalog lists %d artifacts: publishing would delist all of them. Check --source and --packages-dir; if delisting everything is what you want, pass --allow-empty", filepath.Join(o.Source, o.PackagesDir), n))
		}
	}
	vs = s.selected(vs)
	r.markChanged(vs, files, state.Artifacts)
	changed := model.ChangedVersions(vs)
	if err := sh.readBundles(ctx, r.mc, changed); err != nil {
		return cr, err
	}
	res.Findings = lintStage(ctx, o.Lint, files, vs)
	res.Findings = append(res.Findings, editedInPlace(o.Lint, r.diff, vs, state.Artifacts)...)
	vf, verified := verifyStage(ctx, o.Verify, r.mc, changed)
	res.Findings = append(res.Findings, vf...)
	res.Verified = verified
	if verified != nil {
		o.logf("%s", verifySummary(verified))
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

	env := target.Env{Client: r.mc, ReadBundles: func(ctx context.Context, vs []*model.Version) error { return sh.readBundles(ctx, r.mc, vs) }}
	if err := tgt.Prepare(ctx, env, vs, s.targetState()); err != nil {
		return cr, err
	}
	var related []mirror.Target
	for _, ref := range tgt.Images() {
		related = append(related, mirror.Target{Ref: ref})
	}
	rep, err := sh.mirror(ctx, r.mc, o.Mirror.DstRegistry, vs, related)
	res.Mirror = rep
	if err != nil {
		return cr, err
	}
	o.logf("mirror: %d images, %d copied, %d already at %s", len(rep.Images), rep.Copied(), len(rep.Images)-rep.Copied(), o.Mirror.DstRegistry)

	current, err := Artifacts(clientMapper{r.mc}, vs, rep)
	if err != nil {
		return cr, inputErr(err)
	}
	carryOver(current, state.Artifacts, false)
	cr.current = current
	cr.vs = vs
	return cr, nil
}

// mirrorVersions mirrors extra and the related images of the changed
// versions of vs, then their bundles (mirrorTargets), after checking push
// access at the destination. A failed image is annotated with the lines of
// every manifest of vs that names it; the error is an *InputError when only
// the package repo can fix it (mirrorErr).
func mirrorVersions(ctx context.Context, mc *mirror.Client, vs []*model.Version, extra []mirror.Target) (*mirror.Report, error) {
	related, bundleRefs := mirrorTargets(vs, extra)
	return mirrorTargetList(ctx, mc, vs, related, bundleRefs)
}

// mirrorTargetList mirrors related, then bundleRefs (mirrorTargets of
// vs), as mirrorVersions does.
func mirrorTargetList(ctx context.Context, mc *mirror.Client, vs []*model.Version, related, bundleRefs []mirror.Target) (*mirror.Report, error) {
	if len(bundleRefs) > 0 {
		if err := mc.CheckDestination(bundleRefs[0].Ref); err != nil {
			return nil, fmt.Errorf("nothing mirrored, nothing committed: %w", err)
		}
	}
	rep, err := mc.MirrorTargets(ctx, related, bundleRefs)
	if err != nil {
		return rep, mirrorErr(annotateImageErrors(err, namedBy(vs)))
	}
	return rep, nil
}

// mirrorTargets returns what mirroring the changed versions of vs means:
// extra and their related images (Version.Images), and their bundles, each
// under its version's tag at the destination (also when spec.artifact pins
// it by digest).
func mirrorTargets(vs []*model.Version, extra []mirror.Target) (related, bundles []mirror.Target) {
	related = extra
	for _, v := range model.ChangedVersions(vs) {
		for _, ref := range v.Images {
			related = append(related, mirror.Target{Ref: ref})
		}
		bundles = append(bundles, mirror.Target{Ref: v.Ref(), Tag: v.Manifest.Tag()})
	}
	return related, bundles
}

// namedBy maps each image reference to the manifest lines that make the run
// mirror it: a spec.relatedImages entry, or the spec.artifact line of a
// bundle whose CSV deploys it.
func namedBy(vs []*model.Version) map[string][]string {
	out := map[string][]string{}
	add := func(ref, where string) {
		for _, w := range out[ref] {
			if w == where {
				return
			}
		}
		out[ref] = append(out[ref], where)
	}
	for _, v := range vs {
		m := v.Manifest
		for j, r := range m.Spec.RelatedImages {
			add(r, fmt.Sprintf("%s:%d (spec.relatedImages)", m.Path, m.Lines[fmt.Sprintf("spec.relatedImages.%d", j)]))
		}
		if v.Bundle != nil {
			for _, r := range v.Bundle.Images {
				add(r, v.Where()+" (deployed by the bundle's CSV)")
			}
		}
		add(m.Spec.Artifact, v.Where()+" (spec.artifact)")
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

func presentArtifacts(arts []model.ArtifactRecord) (n int) {
	for _, a := range arts {
		if a.Present {
			n++
		}
	}
	return n
}

// markUnpublished marks Changed the versions whose bundles must be read
// and mirrored: those changed is true for (nil: all), and those
// publish/state.yaml has no mirrored record of (never published, or
// published before digests were recorded).
func markUnpublished(vs []*model.Version, state []model.ArtifactRecord, changed func(a, v string) bool) {
	known := map[[3]string]bool{}
	for _, a := range state {
		for _, v := range a.Versions {
			if v.Present && a.Present && v.BundleDigest != "" {
				known[[3]string{a.Name, v.Version, v.Tag}] = true
			}
		}
	}
	for _, v := range vs {
		k := v.Key()
		v.Changed = changed == nil || changed(k.Artifact, k.Version) || !known[[3]string{k.Artifact, k.Version, v.Manifest.Tag()}]
	}
}

// carryOver fills what current lacks from the previous state: display name
// and description of an artifact, bundle digest and mirrored images of a
// version (same tag) that was not read in this run, and the recorded
// ArtifactVersion object name of a version (same tag). With mapping, the
// registry and repository of known artifacts come from the state too (used
// when no destination registry is given).
func carryOver(current, previous []model.ArtifactRecord, mapping bool) {
	prev := map[string]model.ArtifactRecord{}
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
		old := map[string]model.VersionRecord{}
		for _, v := range p.Versions {
			old[v.Tag] = v
		}
		for j, v := range current[i].Versions {
			ov, ok := old[v.Tag]
			if ok && v.BundleDigest == "" {
				current[i].Versions[j].BundleDigest, current[i].Versions[j].Images = ov.BundleDigest, ov.Images
			}
			if ok && v.ObjectName == "" {
				current[i].Versions[j].ObjectName = ov.ObjectName // imported: the cluster's name is kept
			}
		}
	}
}

func sortErrs(errs []error) {
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
}

// Mapper maps the source reference of a bundle image (spec.artifact) to the
// registry (host[:port]) and repository it is mirrored to: an Artifact's
// spec.registry and spec.repository. An error names what is wrong with the
// reference.
type Mapper interface {
	MapRepository(src string) (registry, repository string, err error)
}

// clientMapper is the mapping of a registry client (--dst-registry).
type clientMapper struct{ mc *mirror.Client }

func (c clientMapper) MapRepository(src string) (string, string, error) {
	ref, err := c.mc.ParseReference(src)
	if err != nil {
		return "", "", err
	}
	return c.mc.DstHost(), c.mc.DestinationRepository(ref), nil
}

// UnmappedRegistry is the registry of a new artifact when no destination
// registry was given (`publish plan` without --dst-registry): a name that
// cannot resolve (RFC 6761). Known artifacts keep their recorded registry.
const UnmappedRegistry = "unmapped.invalid"

// unmapped maps every reference to UnmappedRegistry and its own repository
// path: the mapping when there is no destination registry.
type unmapped struct{}

func (unmapped) MapRepository(src string) (string, string, error) {
	if err := registry.CheckReference(src); err != nil {
		return "", "", fmt.Errorf("image reference %q: %w", src, err)
	}
	ref, err := name.ParseReference(src)
	if err != nil {
		return "", "", err
	}
	return UnmappedRegistry, ref.Context().RepositoryStr(), nil
}

// DestinationOf returns the mapping of a registry client (--dst-registry),
// or unmapped when the client is nil or has no destination registry.
func DestinationOf(mc *mirror.Client) Mapper {
	if mc == nil || mc.DstHost() == "" {
		return unmapped{}
	}
	return clientMapper{mc}
}

// Artifacts builds the published artifacts from the versions (sorted by
// manifest.Sort; bundles nil when not read) and the mirror report (nil when
// nothing was mirrored), mapping each artifact's bundle repository with m.
// Display name and description come from the newest version's manifest
// info, else from its CSV.
func Artifacts(m Mapper, vs []*model.Version, rep *mirror.Report) ([]model.ArtifactRecord, error) {
	digests := map[string]mirror.Result{}
	if rep != nil {
		for _, r := range rep.Images {
			digests[r.Source] = r
		}
	}
	var out []model.ArtifactRecord
	for _, art := range model.Group(vs) {
		a := model.ArtifactRecord{Name: art.Name}
		for i, v := range art.Versions {
			pm := v.Manifest
			registry, repository, err := m.MapRepository(pm.Spec.Artifact)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", v.Where(), err)
			}
			if i == 0 {
				a.Registry, a.Repository = registry, repository
			}
			// Versions are sorted by semver: the last one wins.
			a.DisplayName = pm.Spec.Info.DisplayName
			a.Description = pm.Spec.Info.Description
			if b := v.Bundle; b != nil {
				if a.DisplayName == "" {
					a.DisplayName = b.DisplayName
				}
				if a.Description == "" {
					a.Description = b.Description
				}
			}
			rv := model.VersionRecord{Version: pm.Version.String(), Tag: pm.Tag(), Present: true, Path: pm.Path}
			if r, ok := digests[pm.Spec.Artifact]; ok {
				rv.BundleDigest = r.Digest
			}
			for _, img := range v.Images {
				if r, ok := digests[img]; ok {
					rv.Images = append(rv.Images, model.Image{Source: r.Source, Destination: r.Destination, Digest: r.Digest})
				}
			}
			sort.Slice(rv.Images, func(i, j int) bool { return rv.Images[i].Source < rv.Images[j].Source })
			a.Versions = append(a.Versions, rv)
		}
		out = append(out, a)
	}
	model.SortRecords(out)
	return out, nil
}

// updatedVersions lists "<artifact> <version>" for every version change
// detection saw modified, or whose manifest is edited on disk (dirty),
// that was published before and still is.
func updatedVersions(dr *diff.Result, dirty [][2]string, prev, next []model.ArtifactRecord) []string {
	present := func(arts []model.ArtifactRecord) map[[2]string]bool {
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
	var keys [][2]string
	if dr != nil && !dr.All {
		for _, c := range dr.Changes {
			if c.Kind == diff.Modified {
				keys = append(keys, [2]string{c.Artifact, strings.TrimPrefix(c.Version, "v")})
			}
		}
	}
	keys = append(keys, dirty...)
	var out []string
	seen := map[[2]string]bool{}
	for _, k := range keys {
		if before[k] && after[k] && !seen[k] {
			seen[k] = true
			out = append(out, k[0]+" "+k[1])
		}
	}
	return out
}

// seedOverlay writes, in a catalog seeded by its first publish, the
// overlay of cluster when the template has none: the template's global
// overlay, for cluster (its generated base, its name).
func seedOverlay(dir, cluster string) error {
	p := filepath.Join(dir, filepath.FromSlash(render.ClustersDir), cluster, "kustomization.yaml")
	if _, err := os.Stat(filepath.Dir(p)); err == nil {
		return nil
	}
	data, err := publish.CatalogTemplate.ReadFile("catalog-repo-template/" + render.ClustersDir + "/global/kustomization.yaml")
	if err != nil {
		return err
	}
	return checkout.WriteFiles(dir, map[string][]byte{
		render.ClustersDir + "/" + cluster + "/kustomization.yaml": []byte(strings.ReplaceAll(string(data), "global", cluster)),
	})
}

// otherStates reports whether the catalog root dir holds the state file
// of a cluster other than cluster.
func otherStates(dir, cluster string) bool {
	des, _ := os.ReadDir(filepath.Join(dir, filepath.FromSlash(gitops.StateDir)))
	for _, d := range des {
		if c, ok := gitops.StateCluster(gitops.StateDir + "/" + d.Name()); ok && c != cluster {
			return true
		}
	}
	return false
}

// prepareCatalog reads the state of the catalog root dir (a fresh clone, or
// the files of the branch tip), seeds a first publish from the template
// (empty: the branch has no commit yet) and checks the cluster overlay when
// the target renders through it.
func prepareCatalog(dir string, empty bool, o Options, t target.Target) (*gitops.State, error) {
	state, err := gitops.ReadState(dir, o.Cluster)
	hasState := gitops.HasState(dir)
	if err == nil {
		// A repo with files but no state is someone else's project (or the
		// package repo itself): refused before anything is mirrored, unless
		// the user said so (--init-catalog, or an absent or empty
		// --catalog-path).
		var entries []gitops.Entry
		if entries, err = gitops.DirEntries(dir); err == nil {
			if cerr := gitops.CheckCatalog(hasState, entries, o.Catalog); cerr != nil {
				return nil, inputErr(cerr)
			}
		}
	}
	// A cluster new to a catalog that others were published to seeds
	// nothing: the template's files were added by the first publish.
	if err == nil && (empty || len(state.Artifacts) == 0 && !otherStates(dir, o.Cluster)) {
		// First publish: add the template's files that the repo lacks.
		err = (&gitops.Repo{Dir: dir}).Seed(publish.CatalogTemplate, "catalog-repo-template")
		// Every cluster of the run gets its overlay, in every cluster's
		// scope: the render key covers every overlay.
		for _, c := range append([]string{o.Cluster}, o.runClusters...) {
			if err == nil && empty && t.Kustomize() {
				err = seedOverlay(dir, c)
			}
		}
	} else if err != nil {
		err = inputErr(err)
	}
	if err == nil && t.Kustomize() {
		if oerr := render.CheckOverlay(dir, o.Cluster); oerr != nil {
			err = inputErr(oerr)
		}
	}
	if err != nil {
		return nil, err
	}
	return state, nil
}

// markChanged marks Changed the versions to read, lint and mirror:
// changed since the base, unknown to the state, or edited on disk without a
// commit.
func (r *run) markChanged(vs []*model.Version, files []manifest.File, state []model.ArtifactRecord) {
	markUnpublished(vs, state, r.changed)
	if dirty := dirtyFiles(r.Source, files); len(dirty) > 0 {
		r.warnf("%d manifest files differ from the package repo's HEAD (uncommitted changes): they are published as they are on disk, but the catalog commit names HEAD", len(dirty))
		for _, v := range vs {
			if dirty[v.Manifest.Path] {
				v.Changed = true
				r.dirty = append(r.dirty, [2]string{v.Manifest.Artifact, v.Manifest.Version.String()})
			}
		}
	}
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

// publishWithRetry publishes one cluster (publishClusters): push
// --catalog, whose scope has its own tip.
func publishWithRetry(ctx context.Context, r *run, s *scope, current []model.ArtifactRecord, res *Result) error {
	cr := &clusterRun{r: r, s: s, current: current, res: res, cres: &ClusterResult{Name: r.Cluster}}
	all := &Result{}
	err := publishClusters(ctx, r.Options, nil, []*clusterRun{cr}, all)
	res.Clusters = []ClusterResult{*cr.cres}
	return err
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
			o.warnf("the catalog was published from source commit %s, which this clone does not have: cannot tell whether it is newer; publishing %s", short(theirs), short(ours))
			return false, ""
		}
		return true, fmt.Sprintf("the catalog was published from source commit %s, which is not in the history of %s (it is newer, or on another line; if the package repo's history was rewritten, publish once with --base to overwrite it)", short(theirs), short(ours))
	}
	// The usual case first, cheaply: the catalog's commit is behind ours
	// (a walk from ours that stops at theirs, not one over the whole
	// history).
	if ok, err := tc.IsAncestor(oc); err == nil && ok {
		return false, ""
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

// renderCluster renders the scope's artifacts (scope.render) and pushes
// the cluster's OCI catalog (before any commit: a failed push commits
// nothing). It returns the changes of the cluster's commit, its state file
// included, or nil when no byte of the cluster changes.
func renderCluster(ctx context.Context, r *run, s *scope, current []model.ArtifactRecord, res *Result) ([]catalog.Change, error) {
	o := r.Options
	state := s.state
	next := render.Merge(state.Artifacts, current)
	res.Changes = render.Diff(state.Artifacts, next)
	res.Changes.Updated = updatedVersions(res.Diff, r.dirty, state.Artifacts, next)
	o.logf("render: %s/%s", render.RenderedDir, o.Cluster)
	changes, key, _, err := s.render(ctx, next, false)
	if err != nil {
		return nil, err
	}
	rendered := map[string]string{o.Cluster: key}
	commit, origin := o.sourceCommit()
	unchanged := len(changes) == 0 && sameArtifacts(state.Artifacts, next) && state.Rendered[o.Cluster] == key
	oci, err := r.pushOCI(ctx, s, changes, unchanged, gitops.Source{Repo: origin, Commit: commit}, res)
	if err != nil {
		return nil, err
	}
	var ociRecords map[string]gitops.OCIRecord
	if oci != nil {
		ociRecords = map[string]gitops.OCIRecord{o.Cluster: *oci}
	}
	if prev, had := state.OCI[o.Cluster]; unchanged && (oci == nil && !had || oci != nil && had && prev == *oci) {
		o.logf("catalog: %s: nothing changed", o.Cluster)
		res.Changes.Updated = nil // nothing that reaches the catalog changed
		return nil, nil
	}
	data, err := s.stateFile(gitops.Source{Repo: origin, Commit: commit}, next, rendered, ociRecords)
	if err != nil {
		return nil, err
	}
	return s.withState(changes, data), nil
}

// pushOCI pushes the OCI catalog of the cluster (Options.OCI; nil, nil
// without one): the files of rendered/<cluster> of the new catalog, which
// are the tip's with changes applied (on the incremental way only the
// touched artifacts were rendered), as one artifact (ocicatalog.BuildFiles)
// annotated with the package repo and commit src, to the destination
// registry with the run's registry client. When the catalog did not change
// (unchanged) and the state records this tag, the artifact is built with
// the recorded source commit, the one the state keeps: the same digest,
// and the push only checks that the tag still points at it (pushing it
// again when it does not). It returns the record for publish/state.yaml.
func (r *run) pushOCI(ctx context.Context, s *scope, changes []catalog.Change, unchanged bool, src gitops.Source, res *Result) (*gitops.OCIRecord, error) {
	o := r.Options
	if o.OCI == "" {
		return nil, nil
	}
	tag, err := r.ociTag()
	if err != nil {
		return nil, err
	}
	dir := render.RenderedDir + "/" + o.Cluster
	tipFiles, err := s.tip.Files(dir, nil)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for p, data := range tipFiles {
		files[strings.TrimPrefix(p, dir+"/")] = data
	}
	for _, c := range changes {
		rel, ok := strings.CutPrefix(c.Path, dir+"/")
		if !ok {
			continue
		}
		if c.Delete {
			delete(files, rel)
		} else {
			files[rel] = c.Data
		}
	}
	meta := ocicatalog.Meta{Source: src.Repo, Revision: src.Commit}
	prev, had := s.state.OCI[o.Cluster]
	img, err := ocicatalog.BuildFiles(files, dir, meta)
	if err == nil && unchanged && had && prev.Ref == tag.String() {
		recorded := ocicatalog.Meta{Source: s.state.Source.Repo, Revision: s.state.Source.Commit}
		if again, err := ocicatalog.BuildFiles(files, dir, recorded); err == nil {
			if d, err := again.Digest(); err == nil && d.String() == prev.Digest {
				img = again
			}
		}
	}
	if err != nil {
		return nil, err
	}
	opts := r.dstOpts
	if opts == nil {
		opts = r.mc.DstOptions()
	}
	pr, err := ocicatalog.PushImage(ctx, img, tag, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w; nothing committed", err)
	}
	res.OCI = &pr
	if pr.Pushed {
		o.logf("oci: pushed %s/%s to %s@%s", render.RenderedDir, o.Cluster, pr.Ref, pr.Digest)
	} else {
		o.logf("oci: %s already points at %s, nothing pushed", pr.Ref, pr.Digest)
	}
	if o.Sign != nil {
		desc, err := imageDescriptor(img)
		if err == nil {
			err = signCatalog(ctx, o, tag.Context(), desc, pr.Pushed, opts)
		}
		if err != nil {
			return nil, fmt.Errorf("%w; nothing committed", err)
		}
	}
	return &gitops.OCIRecord{Ref: pr.Ref, Digest: pr.Digest}, nil
}

// ociTag is the tag of Options.OCI (ocicatalog.Tag) parsed with the run's
// naming options (plain HTTP). Errors are *InputError naming --oci and
// publish.yaml.
func (r *run) ociTag() (name.Tag, error) {
	tag, err := ocicatalog.Tag(r.OCI, r.Cluster)
	if err == nil {
		var ref name.Reference
		if ref, err = r.mc.ParseReference(tag.String()); err == nil {
			if t, ok := ref.(name.Tag); ok {
				return t, nil
			}
		}
	}
	return name.Tag{}, inputErr(fmt.Errorf("--oci (or publish.yaml clusters.%s.oci): %w", r.Cluster, err))
}

func sameArtifacts(a, b []model.ArtifactRecord) bool {
	x, _ := (&gitops.State{Artifacts: a}).Marshal()
	y, _ := (&gitops.State{Artifacts: b}).Marshal()
	return string(x) == string(y)
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
