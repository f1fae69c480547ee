package pipeline

// Air-gapped transfer (docs/design.md#airgap): `publish package` writes the offline
// archive from the package repo, `publish push` loads it into the
// destination registry and, with --catalog, renders and commits the catalog
// exactly as `publish run` does (`publish create` is internal/scaffold).

import (
	"context"
	"errors"
	"fmt"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/scratch"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/ocicatalog"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/seed"
	"github.com/operator-publish/publish/internal/source/diff"
	"github.com/operator-publish/publish/internal/target"
)

// PlatformsFromSpec, as the only Platforms entry, reduces each image index
// to the spec.arch of the manifests that name it.
const PlatformsFromSpec = "spec"

// PackageOptions configures `publish package`.
type PackageOptions struct {
	Source      string   // package repo checkout (default ".")
	PackagesDir string   // relative to Source (default "packages")
	Paths       []string // package the versions below these (relative to Source); none: all
	// Changed packages only the versions changed since Base (internal/diff).
	Changed bool
	Base    string
	NoFetch bool
	// Mirror holds the source credentials, CA file and plain HTTP.
	Mirror mirror.Options
	// Platforms reduces image indexes to these platforms; [PlatformsFromSpec]
	// to each manifest's spec.arch; nil keeps indexes whole.
	Platforms []string
	Level     int    // gzip level (archive.DefaultLevel)
	Output    string // FILE.tgz
	// MaxSize, when above 0, splits the archive into parts of at most
	// this many bytes (archive.WriteParts: NAME.part-0001.tgz, …, and
	// NAME.parts.json); StrictSize refuses a blob larger than a part
	// instead of giving it a part of its own.
	MaxSize    int64
	StrictSize bool
	// BaseArchives are earlier archives (or their digest lists, split
	// indexes) the site has: what they hold is left out (a differential
	// archive, archive.LoadBase).
	BaseArchives []string
	// Cache is an OCI image layout directory read before the source
	// registries and filled from them (archive.Cache); "" for none.
	Cache string
	// VerifyCache hashes every cached blob before it is used (a damaged
	// one is read from the registry again).
	VerifyCache bool
	// Verify checks the signatures of the selected versions' bundles and
	// related images before anything is written (publish.yaml verify);
	// nil: none.
	Verify ImageVerifier
	// Trust is the trust material of Verify's policy written under
	// trust/ in the archive (verify.TrustFiles), for push on the far side.
	Trust    []archive.File
	Progress *archive.Progress
	Log      func(format string, args ...any)
	// Catalog, when its URL is set, is the catalog repo of the connected
	// side: the archive then carries the OCI catalog of Cluster
	// (ocicatalog), its published state rendered through the cluster's
	// overlay with Render, for `publish push --oci`.
	Catalog gitops.Options
	Cluster string // default "global"
	Render  render.Config
	// Clusters are the clusters (publish.yaml clusters: Name, Include
	// and Exclude are read) whose charts are rendered besides with their
	// own values, each chart the cluster selects with its values file
	// (ChartValues) and Kubernetes version (KubeVersion), as run renders
	// them: the archive carries every image a cluster renders, and the
	// values files and versions for push --catalog
	// (archive.ChartClustersDir). None: the charts' own values only.
	Clusters    []ClusterOptions
	ChartValues func(cluster, artifact string) string
	KubeVersion func(cluster string) string
}

// PackageResult says what Package wrote.
type PackageResult struct {
	*archive.PackageResult
	Versions  int // versions whose images are in the archive
	Manifests int // PackageManifests in the archive (every one of the repo)
	// Catalog is the digest of the OCI catalog in the archive ("" without
	// PackageOptions.Catalog).
	Catalog string
}

// Package writes the offline archive: every bundle and related image (the
// spec.relatedImages and every image the bundle's CSV deploys) of the
// selected versions, every chart and the images it renders (an OCI chart
// as its source has it, a classic repository's chart as the OCI artifact
// `publish run` pushes of it: withBuiltCharts), and every PackageManifest of the repo (so that push
// --catalog renders the whole catalog). Errors: *InputError for the package
// repo (manifests, a bundle that does not exist), else infrastructure.
func Package(ctx context.Context, o PackageOptions) (*PackageResult, error) {
	if o.Source == "" {
		o.Source = "."
	}
	if o.PackagesDir == "" {
		o.PackagesDir = "packages"
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	// The base and the cache first: a wrong --base-archive or --cache is
	// told before any registry is read.
	var base *archive.Base
	if len(o.BaseArchives) > 0 {
		b, err := archive.LoadBase(o.BaseArchives)
		if err != nil {
			return nil, &FlagError{Flag: "--base-archive", Err: err}
		}
		base = b
	}
	var cache *archive.Cache
	if o.Cache != "" {
		c, err := archive.OpenCache(o.Cache)
		if err != nil {
			return nil, &FlagError{Flag: "--cache", Err: err}
		}
		c.Verify = o.VerifyCache
		cache = c
	}
	pk, err := pickVersions(ctx, pickOptions{Source: o.Source, PackagesDir: o.PackagesDir, Paths: o.Paths, Changed: o.Changed, Base: o.Base, NoFetch: o.NoFetch, Flag: "--changed"})
	if err != nil {
		return nil, err
	}
	ms := pk.ms
	if len(ms) == 0 {
		return nil, inputErr(fmt.Errorf("no PackageManifest found under %s", filepath.Join(o.Source, o.PackagesDir)))
	}
	// The OCI catalog before any registry is read: a wrong catalog repo
	// or overlay is told first.
	var catalogs []archive.Catalog
	catalogDigest := ""
	if o.Catalog.URL != "" {
		if o.Cluster == "" {
			o.Cluster = "global"
		}
		img, locs, err := packageCatalog(ctx, o)
		if err != nil {
			return nil, err
		}
		d, err := img.Digest()
		if err != nil {
			return nil, err
		}
		catalogDigest = d.String()
		catalogs = append(catalogs, archive.Catalog{Cluster: o.Cluster, Image: img, Locations: locs})
		o.Log("catalog: the OCI catalog of cluster %s, %s", o.Cluster, catalogDigest)
	}
	if dr := pk.diff; dr != nil {
		o.Log("changes: %d added, %d modified since %s", dr.Count(diff.Added), dr.Count(diff.Modified), report.ShortCommitOr(dr.Base, "the beginning"))
	}
	selected := pk.selected
	if len(selected) == 0 {
		return nil, inputErr(errors.New("no version selected: nothing to package (check the paths and --changed/--base)"))
	}
	mc, err := newClient(o.Mirror, ms)
	if err != nil {
		return nil, err
	}
	// The artifacts read, and their signatures checked before anything
	// is written (publish.yaml verify).
	p, err := prepare(ctx, prepareIn{Versions: selected, Read: o.readPerCluster(mc), MustRead: true, Verify: o.Verify, Client: mc})
	if err != nil {
		return nil, err
	}
	o.Log("bundles: %d read", len(selected))
	if err := verifyOutcome(o.Log, p); err != nil {
		return nil, err
	}

	images, err := withBuiltCharts(archiveImages(selected, o.Platforms), selected)
	if err != nil {
		return nil, err
	}
	files, manifests, err := o.packageFiles(ms, selected)
	if err != nil {
		return nil, err
	}
	ann := map[string]string{}
	if commit, origin := pk.repo.Head(), pk.repo.Origin(); commit != "" {
		ann[archive.AnnotationSourceCommit] = commit
		if origin != "" {
			ann[archive.AnnotationSourceRepo] = origin
		}
	}
	o.Log("package: %d images of %d versions, %d PackageManifests", len(images), len(selected), manifests)
	po := archive.PackageOptions{
		Images: images, Files: files, Trust: o.Trust, Catalogs: catalogs, Parse: mc.ParseReference, Read: mc.ReadReference, Remote: mc.SrcOptions(),
		Level: o.Level, Uncompressed: archive.Uncompressed(o.Output), Progress: o.Progress, Annotations: ann, Cache: cache,
		Signatures: !o.Mirror.SkipSignatures, Base: base,
	}
	var res *archive.PackageResult
	if o.MaxSize > 0 {
		res, err = archive.WriteParts(ctx, o.Output, archive.SplitOptions{MaxSize: o.MaxSize, Strict: o.StrictSize}, po)
	} else {
		res, err = archive.WriteFile(ctx, o.Output, po)
	}
	var se *archive.SizeError
	if errors.As(err, &se) {
		return nil, &FlagError{Flag: "--strict-size", Err: err}
	}
	if err != nil {
		return nil, err
	}
	return &PackageResult{PackageResult: res, Versions: len(selected), Manifests: manifests, Catalog: catalogDigest}, nil
}

// packageCatalog renders the OCI catalog of o.Cluster from the catalog
// repo o.Catalog: the published state of its branch tip, rendered through
// kustomize/clusters/<cluster> with o.Render (the alauda target), as the
// single-layer artifact of ocicatalog, annotated with the source the state
// records, and the bundle locations its Artifacts name unchanged from the
// state (catalogLocations: push checks them against the site). Errors:
// those of opening the tip, *InputError for a catalog with nothing
// published or without the overlay.
func packageCatalog(ctx context.Context, o PackageOptions) (v1.Image, []string, error) {
	tip, err := catalog.OpenTip(ctx, o.Catalog)
	if err != nil {
		return nil, nil, err
	}
	defer tip.Close()
	files, err := tip.Files("", nil)
	if err != nil {
		return nil, nil, err
	}
	cat := render.Files(files)
	if _, err := seed.Migrate(cat); err != nil {
		return nil, nil, err
	}
	state, err := gitops.ReadState(cat, o.Cluster)
	if err != nil {
		return nil, nil, inputErr(fmt.Errorf("--catalog %s: %w", o.Catalog.URL, err))
	}
	if len(state.Artifacts) == 0 {
		return nil, nil, inputErr(fmt.Errorf("--catalog %s (branch %s) has nothing published: run publish run into it first, the OCI catalog is rendered from its publish/state.yaml", o.Catalog.URL, o.Catalog.Branch))
	}
	if err := render.CheckOverlay(cat, o.Cluster); err != nil {
		return nil, nil, inputErr(fmt.Errorf("--cluster %s: %w", o.Cluster, err))
	}
	// Rendered afresh (no previous key): whatever rendered/<cluster> the
	// tip has, the overlay decides.
	dir := render.RenderedDir + "/" + o.Cluster
	cat.Replace([]string{dir}, nil)
	rc := o.Render
	if rc.ChartGitURL == "" {
		rc.ChartGitURL = gitURL(o.Catalog.URL) // a chart's ChartRepo names the catalog repo
	}
	if _, err := target.RenderInto(cat, o.Cluster, rc, state.Artifacts, ""); err != nil {
		return nil, nil, err
	}
	// Paths relative to rendered/<cluster>, as the artifact holds them.
	out := render.Files{}
	for p, data := range cat.Under(dir) {
		out[strings.TrimPrefix(p, dir+"/")] = data
	}
	img, err := ocicatalog.BuildFiles(out, render.RenderedDir+"/"+o.Cluster, ocicatalog.Meta{Source: state.Source.Repo, Revision: state.Source.Commit})
	return img, catalogLocations(out, state.Artifacts), err
}

// hasTag reports whether an image reference names a tag
// ("host/a:v1@sha256:…" does, "host/a@sha256:…" does not).
func hasTag(ref string) bool {
	ref, _, _ = strings.Cut(ref, "@")
	return strings.LastIndex(ref, ":") > strings.LastIndex(ref, "/")
}

// PushOptions configures `publish push`.
type PushOptions struct {
	Archive string // FILE.tgz
	// Mirror holds the destination (DstRegistry, credentials in Dst), the
	// CA file and plain HTTP.
	Mirror mirror.Options
	// NoAuth sends no credentials at all (not even the docker config's).
	NoAuth bool
	// SkipPush pushes no image (they must be at the destination already);
	// SkipCRs renders and commits nothing.
	SkipPush, SkipCRs bool
	// Catalog, when its URL is set, is rendered and committed after the push
	// like `publish run` does (Cluster, Render as in Options).
	Options  Options
	Jobs     int
	TempDir  string
	Limits   archive.Limits
	Progress *archive.Progress
	// OCI gives the reference (REGISTRY/REPOSITORY[:TAG], default tag the
	// cluster) the OCI catalog of a cluster in the archive is pushed to
	// (--oci, publish.yaml clusters.<cluster>.oci); "" (or a nil OCI)
	// leaves it in the archive. With the catalog (Options.Catalog) the
	// site renders and pushes its own (Options.OCI) instead.
	OCI func(cluster string) string
	// Only, when set, restricts the push to these artifacts (spec.artifact
	// names; push --only): their images only are pushed, and the catalog
	// change lists and delists theirs only, every other artifact keeping
	// what the catalog's state has. A name the archive carries no images
	// of is a *FlagError.
	Only []string
	// Selection restricts the push in the same way to the artifacts a
	// cluster's selection takes (its Include and Exclude, publish.yaml
	// clusters.<name>; push --cluster); none: every artifact.
	Selection ClusterOptions
	// Trust, when set, reads the archive's trust material
	// (archive.Contents.Trust: the verify policy's keys and trusted roots,
	// never fetched) once the images are pushed, and returns the verifier
	// of that policy (nil: no rule) and warnings (a certificate that
	// expires soon). Every image pushed is then verified at the
	// destination (verifyPushed) before the OCI catalog is signed or the
	// catalog committed.
	Trust func(files []archive.File) (ImageVerifier, []string, error)
}

// PushResult is what Push did: the push, and the catalog run (nil without
// --catalog or with --skip-crs).
type PushResult struct {
	Push    *archive.PushResult
	Catalog *Result
}

// anonymous resolves every registry to no credentials (--no-auth).
type anonymous struct{}

func (anonymous) Resolve(authn.Resource) (authn.Authenticator, error) { return authn.Anonymous, nil }

// Push loads the archive into the destination registry (archive.Push, with
// the repository mapping of `publish run`) and then, when o.Options.Catalog
// has a URL and not SkipCRs, renders and commits the catalog from the
// PackageManifests inside the archive, exactly as `publish run` would after
// mirroring them. A version whose images are not in the archive must have
// been published before (publish/state.yaml records it); else nothing is
// committed.
func Push(ctx context.Context, o PushOptions) (*PushResult, error) {
	o.Options.defaults()
	// HTTP/1.1 only: concurrent blob uploads over one HTTP/2 connection
	// can stall for good against some registries (go-containerregistry
	// issue #1210; seen with distribution 2.8 over TLS), and push uploads
	// several blobs at once. One /v2/ ping per registry, not one per
	// repository (registry.Options.PingOnce).
	o.Mirror.HTTP1, o.Mirror.PingOnce = true, true
	if o.Mirror.Logger == nil {
		o.Mirror.Logger = o.Options.Log // retries, requests that wait
	}
	mc, err := mirror.New(o.Mirror)
	if err != nil {
		return nil, inputErr(err)
	}
	if mc.DstHost() == "" {
		return nil, inputErr(fmt.Errorf("no destination registry: set %s HOST[:PORT][/PREFIX]", o.Mirror.Flags.Registry))
	}
	opts, keychain := pushCredentials(mc, o.NoAuth)
	catalog := o.Options.Catalog.URL != "" && !o.SkipCRs
	sub := &pushSubset{only: o.Only, sel: o.Selection}
	var sel func(c *archive.Contents) (func(archive.IndexEntry) bool, error)
	if !sub.whole() {
		sel = sub.selectImages
	}
	check := mc.CheckDestination
	if o.NoAuth {
		check = nil
	}
	pr, err := archive.Push(ctx, o.Archive, archive.PushOptions{
		Map: func(src string) (name.Reference, error) {
			r, err := mc.ParseReference(src)
			if err != nil {
				return nil, err
			}
			return mc.Destination(r)
		},
		MapCatalog: func(e archive.IndexEntry, images []archive.IndexEntry) (name.Reference, error) {
			cluster := e.Catalog
			if catalog || o.OCI == nil || o.OCI(cluster) == "" {
				return nil, nil
			}
			r := &run{Options: Options{OCI: o.OCI(cluster), Cluster: cluster}, mc: mc}
			tag, err := r.ociTag()
			if err != nil {
				return nil, err
			}
			if err := checkCatalogLocations(mc, e, images); err != nil {
				return nil, err
			}
			return tag, nil
		},
		Check: check, Select: sel,
		Remote: opts, Keychain: keychain, Transport: mc.Registry().Transport(),
		Jobs: o.Jobs, TempDir: o.TempDir, SkipPush: o.SkipPush,
		Limits: o.Limits, Progress: o.Progress,
	})
	if err != nil {
		var re *archive.RegistryError
		var ee *archive.EntryError
		var me *archive.MapError
		var fe *FlagError
		switch {
		case errors.As(err, &fe):
			return nil, fe // --only, --cluster: nothing pushed
		case errors.As(err, &me):
			return nil, inputErr(err) // the archive has no place at this destination
		case errors.As(err, &re):
			return nil, describePush(mc, err)
		case errors.As(err, &ee):
			return nil, inputErr(err) // the archive is damaged or hostile
		}
		return nil, err
	}
	res := &PushResult{Push: pr}
	verified, err := verifyPushed(ctx, o, mc, opts, pr)
	if err == nil {
		err = attestPushed(ctx, o, mc, opts, pr, verified)
	}

	if err != nil {
		return res, err
	}
	if o.Options.Sign != nil {
		for _, im := range pr.Images {
			if im.Catalog == "" {
				continue
			}
			dst, err := mc.ParseReference(im.Destination)
			if err != nil {
				return nil, err
			}
			desc, err := remote.Head(dst.Context().Digest(im.Digest), append(opts, remote.WithContext(ctx))...)
			if err == nil {
				err = signCatalog(ctx, o.Options, dst.Context(), *desc, !im.Skipped, opts)
			}
			if err != nil {
				return nil, describePush(mc, err)
			}
		}
	}
	for _, c := range pr.CatalogsLeft {
		if catalog {
			o.Options.logf("push: the archive's OCI catalog of cluster %s is left out: the catalog rendered here is pushed instead (--oci)", c)
		} else {
			o.Options.logf("push: the archive carries the OCI catalog of cluster %s: pass --oci REGISTRY/REPOSITORY[:TAG] (or publish.yaml clusters.%s.oci) to push it", c, c)
		}
	}
	if !catalog {
		return res, nil
	}
	if len(pr.Left) > 0 {
		o.Options.logf("push: %d images of artifacts outside %s left in the archive", len(pr.Left), sub.describe())
	}
	cr, err := publishArchive(ctx, o, mc, opts, pr, sub)
	res.Catalog = cr
	return res, err
}

// pushCredentials returns the destination's remote options (reads,
// manifests) and its keychain (blob uploads: archive.PushOptions.Keychain),
// the same credentials: DstOptions', or none at all with noAuth
// (--no-auth).
func pushCredentials(mc *mirror.Client, noAuth bool) ([]remote.Option, authn.Keychain) {
	if noAuth {
		return append(mc.DstOptions(), remote.WithAuthFromKeychain(anonymous{})), anonymous{}
	}
	return mc.DstOptions(), mc.Registry().SideKeychain(registry.Destination)
}

// describePush says what to do about a registry error of a push
// (registry.Client.Describe), unless the push-access check said so
// already.
func describePush(mc *mirror.Client, err error) error {
	var re *registry.Error
	if errors.As(err, &re) && re.Op == registry.OpCheckPush {
		return fmt.Errorf("nothing pushed: %w", err)
	}
	return mc.Describe("pushing to the destination", mc.DstHost(), err)
}

// publishArchive is the render and commit half of `publish run`, fed by the
// archive's PackageManifests and the push's digests.
func publishArchive(ctx context.Context, po PushOptions, mc *mirror.Client, dstOpts []remote.Option, pr *archive.PushResult, sub *pushSubset) (*Result, error) {
	o := po.Options
	tmp, err := scratch.MkdirTemp(po.TempDir, "archive-packages")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for _, f := range pr.Contents.Packages {
		p := filepath.Join(tmp, "packages", filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return nil, err
		}
	}
	if err := writeArchiveFiles(tmp, archive.PackagesDir+archive.ChartClustersDir, pr.Contents.ChartClusters); err != nil {
		return nil, err
	}
	if err := carriedChartClusters(&o, pr.Contents.ChartClusters); err != nil {
		return nil, err
	}
	o.Source, o.PackagesDir = tmp, "packages"
	o.SourceCommitOverride = pr.Contents.Annotations[archive.AnnotationSourceCommit]
	o.SourceRepoOverride = pr.Contents.Annotations[archive.AnnotationSourceRepo]
	ms, err := Scan(o.Source, o.PackagesDir)
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, inputErr(fmt.Errorf("%s holds no PackageManifest: nothing to render (package it with publish package)", po.Archive))
	}
	res := &Result{Manifests: len(ms), SourceCommit: o.SourceCommitOverride}
	rep := &mirror.Report{}
	inArchive := map[string]bool{}
	for _, im := range pr.Images {
		if im.Catalog != "" {
			continue
		}
		rep.Images = append(rep.Images, mirror.Result{Source: im.Source, Destination: im.Destination, Digest: im.Digest, Skipped: im.Skipped})
		if im.Bundle {
			inArchive[im.Source] = true
		}
	}
	res.Mirror = rep
	tgt, err := o.newTarget()
	if err != nil {
		return res, err
	}
	sc, err := openCatalogScope(ctx, o, tgt)
	if err != nil {
		return res, err
	}
	defer func() { sc.Close() }()
	state := sc.state
	// Changed: the versions publish/state.yaml has no mirrored record of.
	vs := model.NewVersions(ms)
	markUnpublished(vs, state.Artifacts, func(a, v string) bool { return false })
	// A version whose images the archive does not carry and that was never
	// published is left out: it is neither listed nor, since the archive
	// carries every manifest, taken for a delisting (a subset archive,
	// `publish package DIR...`, publishes its versions only). A version
	// whose bundle the archive carries is read again, at the destination.
	var kept []*model.Version
	var left []string
	for _, v := range vs {
		m := v.Manifest
		switch {
		case !sub.takes(m.Artifact):
			continue // outside the subset: kept as the state has it, below
		case inArchive[v.Ref()]:
			v.Changed = true
		case v.Changed:
			left = append(left, fmt.Sprintf("%s %s", m.Artifact, m.Version))
			continue
		}
		kept = append(kept, v)
	}
	if len(left) > 0 {
		o.logf("push: %d versions are not in %s and not published yet, left as they are (package them to publish them): %s", len(left), filepath.Base(po.Archive), strings.Join(left, ", "))
	}
	res.Unpublished = left
	// Nothing is linted or verified here: the connected side did that
	// when it packaged (and lint would reach registries an air gap cannot).
	p, err := prepare(ctx, prepareIn{Versions: kept, Previous: state.Artifacts, Read: readPushed(mc, dstOpts, o.kindEnv(mc), res), Records: clientMapper{mc}, Report: rep})
	if err != nil {
		return res, err
	}
	current := append(p.current, sub.outside(state.Artifacts)...)
	sc.vs = kept // the charts read at the destination: their sources in the catalog (chartSources)
	return res, publishWithRetry(ctx, &run{Options: o, mc: mc, target: tgt, dstOpts: dstOpts}, sc, current, res)
}

// sourceCommit is the source commit and repo recorded in the state.
func (o *Options) sourceCommit() (commit, origin string) {
	if o.SourceCommitOverride != "" {
		return o.SourceCommitOverride, o.SourceRepoOverride
	}
	repo, err := o.sourceRepo()
	if err != nil {
		return "", ""
	}
	return repo.Head(), repo.Origin()
}

// verifyOutcome logs the verification summary of p and its findings
// that are not errors (package: the signatures of the versions packaged,
// publish.yaml verify). Errors: *InputError with the error findings.
func verifyOutcome(log func(format string, args ...any), p *prepared) error {
	if p.verified == nil {
		return nil
	}
	for _, l := range verifySummary(p.changed, p.verified) {
		log("%s", l)
	}
	for _, f := range p.findings {
		if f.Severity != lint.Error {
			log("lint: %s", f)
		}
	}
	if hasErrors(p.findings) {
		return &InputError{Err: &LintError{Findings: p.findings}}
	}
	return nil
}
