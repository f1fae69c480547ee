package target

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/render"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// DefaultOPMImage is the catalog base image when publish.yaml names none:
// the opm release whose file-based catalog format and serve cache the
// catalog is built for (operator-registry v1.73.0).
const DefaultOPMImage = "quay.io/operator-framework/opm:v1.73.0"

// CatalogSourceFile is the CatalogSource's file below rendered/<cluster>/.
const CatalogSourceFile = "catalogsource.yaml"

// ClusterCatalogFile is the ClusterCatalog's file below rendered/<cluster>/
// (OLM v1).
const ClusterCatalogFile = "clustercatalog.yaml"

// NodeConfigDir holds, per cluster, the node files of the image
// redirection (containerd, CRI-O): node-config/<cluster>/, beside
// rendered/ and outside what Argo CD or Flux sync (they are not Kubernetes
// objects).
const NodeConfigDir = "node-config"

// ClusterExtensionFile returns the file of the ClusterExtension name
// below rendered/<cluster>/ (OLM v1).
func ClusterExtensionFile(name string) string { return "clusterextension-" + name + ".yaml" }

// Catalog kinds (publish.yaml clusters.<cluster>.olm.catalogKinds): what
// points the cluster at the catalog image.
const (
	// KindCatalogSource is OLM v0's CatalogSource (the default).
	KindCatalogSource = "CatalogSource"
	// KindClusterCatalog is OLM v1's ClusterCatalog (operator-controller).
	KindClusterCatalog = "ClusterCatalog"
)

// olmKeyPrefix (olm.RenderKeyPrefix) starts the render key of an olm cluster in
// publish/state.yaml: "olm <catalog image>@sha256:...".
const olmKeyPrefix = olm.RenderKeyPrefix

// OLMOptions configures the olm target: its Settings.Own, decoded from
// publish.yaml clusters.<cluster>.olm (decodeOLM) or built in code.
type OLMOptions struct {
	// CatalogImage is the repository[:tag] the catalog image is pushed to;
	// default olm/publish-catalog below the destination registry, tag the
	// cluster name.
	CatalogImage string
	// BaseImage is the opm image (a source reference, mirrored like a
	// related image; default DefaultOPMImage).
	BaseImage string
	// Images are OLM's own images, mirrored like related images.
	Images []string
	// Source sets the CatalogSource; Image is filled in by the run.
	Source olm.SourceOptions
	// BundleFormat is how the catalog's olm.bundle entries carry the
	// manifests (publish.yaml clusters.<cluster>.olm.bundleFormat):
	// olm.csv.metadata (the default, "") or olm.bundle.object.
	BundleFormat olm.Format
	// CatalogKinds are the objects rendered for the catalog image:
	// KindCatalogSource, KindClusterCatalog or both (none: CatalogSource).
	CatalogKinds []string
	// ClusterCatalog sets the ClusterCatalog; Image is filled in by the
	// run (by digest, or by tag with PollIntervalMinutes).
	ClusterCatalog olm.CatalogOptions
	// Extensions are the ClusterExtensions rendered beside the
	// ClusterCatalog, one per package to install; Catalog is filled in
	// with the ClusterCatalog's name.
	Extensions []olm.ExtensionOptions
	// Redirect are the image redirection kinds rendered from the mirrored
	// images recorded in publish/state.yaml (olm.RedirectKinds; none by
	// default: the IDMS and ITMS CRDs exist on OpenShift only).
	Redirect []string
	// DeprecationPeriod is how long a delisted version stays in the
	// catalog, deprecated (ParseDeprecationPeriod; "" is 30 days).
	DeprecationPeriod string
	// Channels is ChannelsBundles ("" too) or ChannelsSemver;
	// DefaultChannelType the semver template's defaultChannelTypePreference
	// (olm.StreamMinor, "" too, or olm.StreamMajor).
	Channels           string
	DefaultChannelType string
	// ServeCache false builds the catalog image without opm's serve cache
	// (nil: with it when the base image's opm wrote it; olm.CacheDecision).
	ServeCache *bool
}

// Channel sources of publish.yaml clusters.<cluster>.olm.channels.
const (
	// ChannelsBundles takes the channels the bundles name
	// (metadata/annotations.yaml), the default.
	ChannelsBundles = "bundles"
	// ChannelsSemver generates channel streams as opm's semver template
	// does (olm.Semver).
	ChannelsSemver = "semver"
)

// kinds returns the catalog kinds (default CatalogSource) and an error
// naming a wrong one.
func (o OLMOptions) kinds() (v0, v1 bool, err error) {
	if len(o.CatalogKinds) == 0 {
		return true, false, nil
	}
	for _, k := range o.CatalogKinds {
		switch k {
		case KindCatalogSource:
			v0 = true
		case KindClusterCatalog:
			v1 = true
		default:
			return false, false, fmt.Errorf("catalogKinds: %q: want %s, %s or both", k, KindCatalogSource, KindClusterCatalog)
		}
	}
	return v0, v1, nil
}

// UsesOLMv1 reports whether the cluster gets a ClusterCatalog (OLM v1).
func (o OLMOptions) UsesOLMv1() bool {
	_, v1, _ := o.kinds()
	return v1
}

// olmSettings are the settings of an olm target: the generic ones and its
// own (Settings.Own).
type olmSettings struct {
	Settings
	OLM OLMOptions
}

// olmTarget publishes to upstream OLM: a file-based catalog image holding
// every present version, pushed to the destination registry, and
// rendered/<cluster>/catalogsource.yaml pointing at it by digest.
type olmTarget struct {
	s  olmSettings
	mc *mirror.Client // set by Prepare
	// bundles holds the bundle of every present version read in this run.
	bundles map[model.Key]*bundle.Bundle
	// reused holds the entries of the last catalog image for unchanged
	// versions; published those of the versions read again (a rebuilt
	// bundle), which a record that keeps the published digest (a gate
	// holding the rebuild back, internal/rollout) takes instead of the
	// bundle read.
	reused, published map[model.Key]olm.Entry
	// where names each version's manifest (file:line of spec.artifact).
	where map[model.Key]string
	// delisted holds the entries of the last catalog image for versions
	// not listed by this run (olmdeprecate.go), history the catalog's
	// history of the cluster (UseHistory).
	delisted map[model.Key]olm.Entry
	history  *catalog.History
	// messages are the PackageManifests' spec.deprecation.message.
	messages map[model.Key]string
}

// newOLM makes the olm target of s: s.Own is nil (the defaults) or an
// OLMOptions (decodeOLM's value, or one built in code); any other type is
// a caller's bug, and panics.
func newOLM(s Settings) Target {
	t := &olmTarget{s: olmSettings{Settings: s}}
	switch o := s.Own.(type) {
	case nil:
	case OLMOptions:
		t.s.OLM = o
	default:
		panic(fmt.Sprintf("olm target: settings of type %T, want target.OLMOptions", s.Own))
	}
	return t
}

func (t *olmTarget) base() string { return t.s.OLM.base() }

// Check checks the settings before any side effect, all of them with
// problems (the rules publish.yaml was held to, for settings built in
// code) and referenceProblems: a wrong poll interval or image reference
// stops the run before anything is mirrored. The error is an input error
// naming publish.yaml clusters.<cluster>.olm, each problem on a line.
func (t *olmTarget) Check() error {
	o := t.s.OLM
	var errs []error
	for _, p := range append(o.problems(t.s.Cluster), o.referenceProblems()...) {
		errs = append(errs, errors.New(p.msg))
	}
	if len(errs) > 0 {
		return model.Input(fmt.Errorf("publish.yaml clusters.%s.olm: %w", t.s.Cluster, errors.Join(errs...)))
	}
	return nil
}

// Images are the catalog base image and OLM's own images.
func (t *olmTarget) Images() []string {
	return append([]string{t.base()}, t.s.OLM.Images...)
}

// Prepare gathers what the catalog needs of the versions this run did not
// read (unchanged since the last publish): the catalog holds every present
// version. Their olm.bundle entries are taken from the catalog image
// recorded in publish/state.yaml when it has them (same bundle image by
// digest) in a form the catalog's format can use (an olm.csv.metadata
// entry cannot serve an olm.bundle.object catalog); the other bundles are
// read from the source. Bundle errors are
// input errors naming the manifest.
func (t *olmTarget) Prepare(ctx context.Context, env Env, vs []*model.Version, state *gitops.State) error {
	mc := env.Client
	t.mc = mc
	t.bundles, t.reused, t.where = map[model.Key]*bundle.Bundle{}, map[model.Key]olm.Entry{}, map[model.Key]string{}
	t.published = map[model.Key]olm.Entry{}
	t.messages = map[model.Key]string{}
	for _, v := range vs {
		t.where[v.Key()] = v.Where()
		if v.Manifest != nil {
			t.messages[v.Key()] = v.Manifest.Spec.Deprecation.Message
		}
	}
	prev := t.previousCatalog(ctx, state)
	digests := map[[2]string]string{} // artifact, tag -> bundle digest at the last publish
	for _, a := range state.Artifacts {
		for _, v := range a.Versions {
			digests[[2]string{a.Name, v.Tag}] = v.BundleDigest
		}
	}
	var unread []*model.Version
	for _, v := range vs {
		m := v.Manifest
		var e olm.Entry
		found := false
		if d := digests[[2]string{m.Artifact, m.Tag()}]; d != "" && prev != nil {
			if ref, err := mc.ParseReference(m.Spec.Artifact); err == nil {
				e, found = prev.Entry(mc.DstHost()+"/"+mc.DestinationRepository(ref)+"@"+d, t.s.OLM.BundleFormat)
				found = found && t.hasInstaller(m.Artifact, e)
			}
		}
		switch {
		case v.Changed && kind.BundleOf(v) != nil:
			if found {
				t.published[v.Key()] = e
			}
		case found:
			t.reused[v.Key()] = e
		default:
			unread = append(unread, v)
		}
	}
	t.keepDelisted(prev, vs, state)
	if err := env.Read(ctx, unread); err != nil {
		return err
	}
	var errs []error
	for _, v := range vs {
		if v.ReadErr != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v.Where(), v.ReadErr))
			continue
		}
		if b := kind.BundleOf(v); b != nil {
			t.bundles[v.Key()] = b
		}
	}
	if len(errs) > 0 {
		return model.Input(errors.Join(errs...))
	}
	if n := len(unread); n > 0 || len(t.reused) > 0 {
		t.s.logf("olm: %d unchanged bundles taken from the last catalog image, %d read again", len(t.reused), n)
	}
	return t.checkPrepared(vs)
}

// Condenser is implemented by a target that keeps, of each bundle read,
// only what its Render needs, condensed as soon as the bundle is read and
// linted (kind.Prelint.Condense), although its kind keeps bundles whole
// (Capabilities.WholeBundles). Condenser returns the function that
// condenses the bundle b of version v (true: b was made slim), or nil
// when this target's settings need whole bundles.
type Condenser interface {
	Condenser() func(v *model.Version, b *bundle.Bundle) bool
}

// Condenser condenses each bundle to its olm.bundle (olm.Condense) for a
// catalog in the default format, olm.csv.metadata; nil for
// olm.bundle.object, whose entries carry every object of the bundles.
func (t *olmTarget) Condenser() func(v *model.Version, b *bundle.Bundle) bool {
	if f, err := olm.ParseFormat(string(t.s.OLM.BundleFormat)); err != nil || f != olm.FormatCSVMetadata {
		return nil
	}
	return func(v *model.Version, b *bundle.Bundle) bool { return olm.Condense(v.Manifest.Artifact, b) }
}

// derivesInstaller reports whether a ClusterExtension of package pkg
// gets installer RBAC derived from its bundles (a service account without
// installerRBAC cluster-admin).
func (t *olmTarget) derivesInstaller(pkg string) bool {
	for _, e := range t.s.OLM.Extensions {
		if e.Package == pkg && e.ServiceAccount != "" && e.InstallerRBAC != olm.InstallerRBACClusterAdmin {
			return true
		}
	}
	return false
}

// hasInstaller reports whether the reused entry e of package pkg has what
// the ClusterExtensions need: its installer rules when they are derived.
func (t *olmTarget) hasInstaller(pkg string, e olm.Entry) bool {
	if !t.derivesInstaller(pkg) {
		return true
	}
	_, ok := e.Installer()
	return ok
}

// previousCatalog reads the catalog image of the cluster's last publish
// (nil when there is none or it cannot be read: then every bundle is read
// again, which is slower but gives the same catalog).
func (t *olmTarget) previousCatalog(ctx context.Context, state *gitops.State) *olm.Previous {
	key := state.Rendered[t.s.Cluster]
	if !strings.HasPrefix(key, olmKeyPrefix) {
		return nil
	}
	ref, err := t.mc.ParseReference(strings.TrimPrefix(key, olmKeyPrefix))
	if err == nil {
		var prev *olm.Previous
		if prev, err = olm.LoadPrevious(ctx, ref, t.mc.DstOptions()...); err == nil {
			return prev
		}
	}
	t.s.warnf("the last catalog image %s cannot be read (%v): the unchanged bundles are read again", strings.TrimPrefix(key, olmKeyPrefix), err)
	return nil
}

// catalogRef is where the catalog image is pushed.
func (t *olmTarget) catalogRef() (name.Tag, error) {
	cluster := t.s.Cluster
	ref := t.s.OLM.CatalogImage
	if ref == "" {
		src, err := name.ParseReference("olm/publish-catalog:" + cluster)
		if err != nil {
			return name.Tag{}, err
		}
		d, err := t.mc.Destination(src)
		if err != nil {
			return name.Tag{}, err
		}
		ref = d.String()
	}
	var nopts []name.Option
	if t.s.PlainHTTP {
		nopts = append(nopts, name.Insecure)
	}
	if !strings.Contains(ref[strings.LastIndex(ref, "/")+1:], ":") {
		ref += ":" + cluster
	}
	tag, err := name.NewTag(ref, nopts...)
	if err != nil {
		return name.Tag{}, model.Input(fmt.Errorf("catalog image %q (publish.yaml clusters.%s.olm.catalogImage): %w", t.s.OLM.CatalogImage, cluster, err))
	}
	return tag, nil
}

// Render builds the catalog image from every present version of arts,
// pushes it, and points rendered/<cluster>/catalogsource.yaml at it by
// digest; the key is "olm <image by digest>".
func (t *olmTarget) Render(ctx context.Context, cat render.Files, arts []model.ArtifactRecord, _ string) (string, error) {
	if t.mc == nil {
		return "", errors.New("olm target: the bundles were not read")
	}
	pkgs, err := t.catalogPackages(arts)
	if err != nil {
		return "", err
	}
	cfg, err := olm.Build(pkgs, t.s.OLM.BundleFormat)
	if err != nil {
		return "", model.Input(err)
	}
	files, err := olm.Files(cfg)
	if err != nil {
		return "", err
	}
	if files[olm.NotesFile], err = olm.Notes(pkgs); err != nil {
		return "", err
	}
	dst, err := t.catalogRef()
	if err != nil {
		return "", err
	}
	baseSrc, err := t.mc.ParseReference(t.base())
	if err != nil {
		return "", model.Input(fmt.Errorf("catalog base image %q: %w", t.base(), err))
	}
	base, err := t.mc.Destination(baseSrc)
	if err != nil {
		return "", err
	}
	digest, cache, err := olm.Push(ctx, base, dst, files, t.s.OLM.ServeCache, t.mc.DstOptions()...)
	if err != nil {
		return "", err
	}
	t.s.logf("olm: catalog image %s (%d packages, %d bundles); %s", digest, len(cfg.Packages), len(cfg.Bundles), cache.Reason)
	if t.s.Sign != nil {
		opts := append(t.mc.DstOptions(), remote.WithContext(ctx))
		desc, err := remote.Head(digest, opts...)
		if err != nil {
			return "", fmt.Errorf("reading the catalog image %s to sign it: %w", digest, err)
		}
		what, err := t.s.Sign(ctx, digest.Context(), *desc, opts)
		if err != nil {
			return "", fmt.Errorf("signing the catalog image %s (--cosign-key): %w", digest, err)
		}
		t.s.logf("olm: signed the catalog image %s: %s", digest, what)
	}
	rules := map[string]olm.InstallerRules{}
	for _, p := range pkgs {
		if !t.derivesInstaller(p.Name) {
			continue
		}
		var rs []olm.InstallerRules
		for _, e := range p.Entries {
			r, ok := e.Installer()
			if !ok {
				return "", fmt.Errorf("olm target: %s: the installer rules of %s are unknown", p.Name, e.Image)
			}
			rs = append(rs, r)
		}
		rules[p.Name] = olm.Merge(rs...)
	}
	if err := t.writeObjects(cat, digest.String(), withKept(arts, pkgs), rules, t.watchNamespaces(pkgs)); err != nil {
		return "", err
	}
	return olmKeyPrefix + digest.String(), nil
}

// Preview renders nothing: the catalog image is built and pushed by run,
// and the CatalogSource and ClusterCatalog change with its digest only.
// The warning says so, and whether the image will hold opm's serve cache
// (olm.DecideCache, which run applies to the base image), then, a line each, what happens to the delisted
// versions of arts (Delisting.Line: deprecated until when, or removed).
func (t *olmTarget) Preview(_ render.Files, arts []model.ArtifactRecord, _ string) (string, error) {
	w := "target olm: the catalog image and the objects of rendered/" + t.s.Cluster + "/ that point at it are built by publish run; the listing changes above are what the catalog will hold"
	if sc := t.s.OLM.ServeCache; sc != nil && !*sc {
		w += "\ntarget olm: the catalog image has no serve cache (serveCache: false): opm builds it when the catalog pod starts"
	} else {
		w += "\ntarget olm: the catalog image gets opm's serve cache only if the opm of " + t.base() + " is operator-registry " + olm.CacheWriterVersion() + ", which writes it; with another opm it has none (its command is serve /configs without --cache-dir) and opm builds it when the catalog pod starts"
	}
	ds, err := t.delistings(arts)
	if err != nil {
		return "", err
	}
	for _, d := range ds {
		w += "\ntarget olm: " + d.Line()
	}
	return w, nil
}

// RenderFromState renders the CatalogSource from the catalog image
// recorded in publish/state.yaml (no registry access, so the catalog image
// is not rebuilt). The installer rules of the ClusterExtensions are the
// ones the last run rendered into cat (installerRulesAt): deriving them
// needs the bundles.
func (t *olmTarget) RenderFromState(cat render.Files, arts []model.ArtifactRecord, state *gitops.State) error {
	key := state.Rendered[t.s.Cluster]
	if !strings.HasPrefix(key, olmKeyPrefix) {
		return model.Input(fmt.Errorf("cluster %s has no catalog image in publish/state.yaml yet: `publish run --target olm` builds and pushes it first", t.s.Cluster))
	}
	return t.writeObjects(cat, strings.TrimPrefix(key, olmKeyPrefix), arts, nil, nil)
}

// installerRulesAt reads the rules of the ClusterRole and Role
// <name>-installer from the ClusterExtension file a run rendered into
// the catalog cat for e; false when there is none.
func (t *olmTarget) installerRulesAt(cat render.Files, e olm.ExtensionOptions, file string) (olm.InstallerRules, bool, error) {
	data, ok := cat[file]
	if !ok {
		return olm.InstallerRules{}, false, nil
	}
	name := e.Name
	if name == "" {
		name = e.Package
	}
	var r olm.InstallerRules
	found := false
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return olm.InstallerRules{}, false, fmt.Errorf("%s: %w", file, err)
		}
		if obj.Metadata.Name != name+"-installer" {
			continue
		}
		switch obj.Kind {
		case "ClusterRole":
			r.Cluster, found = obj.Rules, true
		case "Role":
			r.Namespace = obj.Rules
		}
	}
	return r, found, nil
}

// writeObjects replaces rendered/<cluster> by the objects that point the
// cluster at the catalog image (host/repo@sha256:...): the CatalogSource,
// the ClusterCatalog and the ClusterExtensions, as catalogKinds asks, and
// the ImageDigestMirrorSet and ImageTagMirrorSet, and node-config/<cluster>
// by the containerd and CRI-O files, as imageRedirection asks, for the
// images the present versions of arts need.
//
// rules are the installer rules of each package whose ClusterExtension
// derives them, watch the watch namespaces of the ClusterExtensions
// without their own (watchNamespaces); nil takes them from the files
// already in cat (RenderFromState).
func (t *olmTarget) writeObjects(cat render.Files, image string, arts []model.ArtifactRecord, rules map[string]olm.InstallerRules, watch map[int]string) error {
	o := t.s.OLM
	v0, v1, err := o.kinds()
	if err != nil {
		return model.Input(fmt.Errorf("publish.yaml clusters.%s.olm.%w", t.s.Cluster, err))
	}
	dir := render.RenderedDir + "/" + t.s.Cluster
	files := render.Files{}
	if v0 {
		so := o.Source
		so.Image = image
		if len(so.Secrets) == 0 {
			so.Secrets = t.s.Render.ImagePullSecrets
		}
		data, err := olm.CatalogSource(so)
		if err != nil {
			return model.Input(fmt.Errorf("publish.yaml clusters.%s.olm.catalogSource: %w", t.s.Cluster, err))
		}
		files[dir+"/"+CatalogSourceFile] = data
	}
	if v1 {
		co := o.ClusterCatalog
		co.Image = image
		if co.PollIntervalMinutes > 0 {
			co.Image = t.pushedTag(image)
		}
		data, err := olm.ClusterCatalog(co)
		if err != nil {
			return model.Input(fmt.Errorf("publish.yaml clusters.%s.olm.clusterCatalog: %w", t.s.Cluster, err))
		}
		files[dir+"/"+ClusterCatalogFile] = data
		name := co.Name
		if name == "" {
			name = olm.DefaultSourceName
		}
		for i, e := range o.Extensions {
			e.Catalog = name
			n := e.Name
			if n == "" {
				n = e.Package
			}
			p := dir + "/" + ClusterExtensionFile(n)
			if e.WatchNamespace == "" && watch != nil {
				e.WatchNamespace = watch[i]
			} else if e.WatchNamespace == "" {
				if e.WatchNamespace, err = watchNamespaceAt(cat, p); err != nil {
					return err
				}
			}
			if t.derivesInstaller(e.Package) && e.ServiceAccount != "" && e.InstallerRBAC != olm.InstallerRBACClusterAdmin {
				if rules != nil {
					e.Rules = rules[e.Package]
				} else {
					r, ok, err := t.installerRulesAt(cat, e, p)
					if err != nil {
						return err
					}
					if !ok {
						return model.Input(fmt.Errorf("publish.yaml clusters.%s.olm.clusterExtensions[%d]: the installer RBAC of %s is derived from its bundles, which publish render does not read: run publish run --target olm first (or set installerRBAC: %s)", t.s.Cluster, i, n, olm.InstallerRBACClusterAdmin))
					}
					e.Rules = r
				}
			}
			data, err := olm.ClusterExtension(e)
			if err != nil {
				return model.Input(fmt.Errorf("publish.yaml clusters.%s.olm.clusterExtensions[%d]: %w", t.s.Cluster, i, err))
			}
			if _, dup := files[p]; dup {
				return model.Input(fmt.Errorf("publish.yaml clusters.%s.olm.clusterExtensions: two ClusterExtensions are named %s", t.s.Cluster, n))
			}
			files[p] = data
		}
	}
	node := NodeConfigDir + "/" + t.s.Cluster
	if err := t.redirection(files, dir, node, arts); err != nil {
		return err
	}
	cat.Replace([]string{dir, node}, files)
	return nil
}

// Files of the image redirection.
const (
	IDMSFile           = "imagedigestmirrorset.yaml"
	ITMSFile           = "imagetagmirrorset.yaml"
	containerdDir      = "containerd/certs.d"
	RegistriesConfFile = "crio/registries.conf.d/50-operator-publish.conf"
)

// redirection adds the files of the image redirection kinds asked for to
// files: the mirror sets below dir, the node files below node.
func (t *olmTarget) redirection(files render.Files, dir, node string, arts []model.ArtifactRecord) error {
	if len(t.s.OLM.Redirect) == 0 {
		return nil
	}
	ms, err := olm.Mirrors(arts)
	if err != nil {
		return model.Input(err)
	}
	for _, k := range t.s.OLM.Redirect {
		switch k {
		case olm.RedirectIDMS, olm.RedirectITMS:
			data, err := olm.MirrorSet(k, olm.DefaultSourceName, ms)
			if err != nil {
				return err
			}
			if data != nil {
				files[dir+"/"+map[string]string{olm.RedirectIDMS: IDMSFile, olm.RedirectITMS: ITMSFile}[k]] = data
			}
		case olm.RedirectContainerd:
			hosts, err := olm.ContainerdHosts(ms, t.s.PlainHTTP)
			if err != nil {
				return model.Input(fmt.Errorf("publish.yaml clusters.%s.olm.imageRedirection: %w", t.s.Cluster, err))
			}
			for h, data := range hosts {
				files[node+"/"+containerdDir+"/"+h+"/hosts.toml"] = data
			}
		case olm.RedirectCRIO:
			if len(ms) > 0 {
				files[node+"/"+RegistriesConfFile] = olm.RegistriesConf(ms, t.s.PlainHTTP)
			}
		default:
			return model.Input(fmt.Errorf("publish.yaml clusters.%s.olm.imageRedirection: %q: want some of %s", t.s.Cluster, k, strings.Join(olm.RedirectKinds, ", ")))
		}
	}
	return nil
}

// pushedTag returns the tag the catalog image (host/repo@sha256:...) was
// pushed with: its repository and the tag of catalogImage, default the
// cluster name (catalogRef).
func (t *olmTarget) pushedTag(image string) string {
	repo, _, _ := strings.Cut(image, "@")
	tag := t.s.Cluster
	if ci := t.s.OLM.CatalogImage; ci != "" {
		if last := ci[strings.LastIndex(ci, "/")+1:]; strings.Contains(last, ":") {
			tag = last[strings.Index(last, ":")+1:]
		}
	}
	return repo + ":" + tag
}
