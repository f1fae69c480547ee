package target

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/olm"
	yaml "go.yaml.in/yaml/v4"
)

// The olm block of publish.yaml (clusters.<cluster>.olm), as decodeOLM
// reads it: every field is optional. README.md ("Configuration") and
// docs/olm.md describe the fields for users.
type olmBlock struct {
	// CatalogImage is the repository, with an optional tag (default: the
	// cluster name), the catalog image is pushed to, e.g.
	// registry.local/olm/catalog. Default: olm/publish-catalog below
	// --dst-registry.
	CatalogImage string `yaml:"catalogImage,omitempty"`
	// BaseImage is the opm image the catalog is built on, as published
	// upstream (default DefaultOPMImage); it is mirrored to the
	// destination like a related image and read from there.
	BaseImage string `yaml:"baseImage,omitempty"`
	// Images are OLM's own images (olm, opm, configmap-operator-registry…)
	// to mirror along, so that OLM itself can be installed from the
	// destination registry.
	Images []string `yaml:"images,omitempty"`
	// CatalogSource sets the rendered CatalogSource.
	CatalogSource olmCatalogSource `yaml:"catalogSource,omitempty"`
	// BundleFormat is how the catalog's olm.bundle entries carry the
	// bundles' manifests: olm.csv.metadata (the default; what `opm render
	// --migrate-level bundle-object-to-csv-metadata` writes, required by
	// OpenShift 4.17 and later) or olm.bundle.object (one property per
	// manifest, for older OLM releases).
	BundleFormat string `yaml:"bundleFormat,omitempty"`
	// CatalogKinds are the objects that point the cluster at the catalog
	// image: CatalogSource (OLM v0, the default), ClusterCatalog (OLM v1)
	// or both.
	CatalogKinds []string `yaml:"catalogKinds,omitempty"`
	// ClusterCatalog sets the rendered ClusterCatalog.
	ClusterCatalog olmClusterCatalog `yaml:"clusterCatalog,omitempty"`
	// ClusterExtensions are rendered beside the ClusterCatalog, one per
	// package to install.
	ClusterExtensions []olmClusterExtension `yaml:"clusterExtensions,omitempty"`
	// ImageRedirection are the files rendered to make the nodes pull the
	// mirrored images from the destination registry: ImageDigestMirrorSet,
	// ImageTagMirrorSet (OpenShift; in rendered/<cluster>/), containerd,
	// CRI-O (node files, in node-config/<cluster>/). None by default.
	ImageRedirection []string `yaml:"imageRedirection,omitempty"`
	// DeprecationPeriod is how long a delisted version stays in the
	// catalog with an olm.deprecations entry before it leaves it: days
	// ("30d") or a Go duration ("720h"); default 30 days, "0" at once
	// (ParseDeprecationPeriod).
	DeprecationPeriod string `yaml:"deprecationPeriod,omitempty"`
	// Channels is where the packages' channels come from: "bundles" (the
	// default) the channels the bundles name, "semver" the minor-version
	// and rolling major-version channels opm's semver template generates
	// from spec.version (olm.Semver).
	Channels string `yaml:"channels,omitempty"`
	// DefaultChannelTypePreference, with channels semver, is the package's
	// default channel: the newest minor-version channel ("minor", the
	// default) or major-version channel ("major"), as in opm's template.
	DefaultChannelTypePreference string `yaml:"defaultChannelTypePreference,omitempty"`
	// ServeCache is whether the catalog image holds opm's serve cache
	// (default true, when the base image's opm is the version that wrote
	// it; olm.CacheDecision).
	ServeCache *bool `yaml:"serveCache,omitempty"`
}

// olmCatalogSource is clusters.<cluster>.olm.catalogSource: the rendered
// CatalogSource (operators.coreos.com/v1alpha1).
type olmCatalogSource struct {
	Name        string `yaml:"name,omitempty"`        // default operator-publish
	Namespace   string `yaml:"namespace,omitempty"`   // default olm
	DisplayName string `yaml:"displayName,omitempty"` // spec.displayName
	Publisher   string `yaml:"publisher,omitempty"`   // spec.publisher
	// PollInterval is spec.updateStrategy.registryPoll.interval (a
	// duration such as 10m); none by default ("off" too), as the image is
	// named by digest, which a poll never finds changed.
	PollInterval string `yaml:"pollInterval,omitempty"`
}

// olmClusterCatalog is clusters.<cluster>.olm.clusterCatalog: the
// rendered ClusterCatalog (olm.operatorframework.io/v1).
type olmClusterCatalog struct {
	Name string `yaml:"name,omitempty"` // default operator-publish
	// PollIntervalMinutes, when set, names the catalog image by its tag
	// and has catalogd poll it every so many minutes; default: by digest,
	// no polling (the CRD forbids polling a digest).
	PollIntervalMinutes int   `yaml:"pollIntervalMinutes,omitempty"`
	Priority            int32 `yaml:"priority,omitempty"` // spec.priority
}

// olmClusterExtension is one entry of
// clusters.<cluster>.olm.clusterExtensions: a rendered ClusterExtension
// (olm.operatorframework.io/v1), installing a package of the catalog.
type olmClusterExtension struct {
	Package   string   `yaml:"package"`            // the artifact name
	Name      string   `yaml:"name,omitempty"`     // default the package
	Namespace string   `yaml:"namespace"`          // where it is installed; must exist
	Channels  []string `yaml:"channels,omitempty"` // default any
	Version   string   `yaml:"version,omitempty"`  // a version or range, e.g. ">=1.2.0 <2.0.0"
	// ServiceAccount, for operator-controller before v1.11, which installs
	// with it: a ServiceAccount of that name is rendered too, with the RBAC
	// InstallerRBAC says. v1.11 and later ignore it.
	ServiceAccount string `yaml:"serviceAccount,omitempty"`
	// InstallerRBAC is what the service account is granted: "bundle" (the
	// default) the rules derived from the package's bundles,
	// "cluster-admin" cluster-admin (docs/olm.md).
	InstallerRBAC string `yaml:"installerRBAC,omitempty"`
	// WatchNamespace is spec.config.inline.watchNamespace, for a bundle
	// without the AllNamespaces install mode: the install namespace
	// (OwnNamespace) or another one (SingleNamespace). Default: the
	// install namespace when the bundles the entry may pick all support
	// OwnNamespace and some not AllNamespaces (olm.DefaultWatchNamespace),
	// else none.
	WatchNamespace string `yaml:"watchNamespace,omitempty"`
	// UpgradeConstraintPolicy is
	// spec.source.catalog.upgradeConstraintPolicy: CatalogProvided (the
	// default) or SelfCertified.
	UpgradeConstraintPolicy string `yaml:"upgradeConstraintPolicy,omitempty"`
}

// options returns the target's settings the block sets.
func (y olmBlock) options() OLMOptions {
	cs := y.CatalogSource
	o := OLMOptions{
		CatalogImage: y.CatalogImage, BaseImage: y.BaseImage, Images: y.Images,
		Source:       olm.SourceOptions{Name: cs.Name, Namespace: cs.Namespace, DisplayName: cs.DisplayName, Publisher: cs.Publisher, PollInterval: cs.PollInterval},
		BundleFormat: olm.Format(y.BundleFormat),
		CatalogKinds: y.CatalogKinds,
		ClusterCatalog: olm.CatalogOptions{
			Name: y.ClusterCatalog.Name, PollIntervalMinutes: y.ClusterCatalog.PollIntervalMinutes, Priority: y.ClusterCatalog.Priority,
		},
		Redirect:           y.ImageRedirection,
		DeprecationPeriod:  y.DeprecationPeriod,
		Channels:           y.Channels,
		DefaultChannelType: y.DefaultChannelTypePreference,
		ServeCache:         y.ServeCache,
	}
	for _, e := range y.ClusterExtensions {
		o.Extensions = append(o.Extensions, olm.ExtensionOptions{
			Name: e.Name, Package: e.Package, Namespace: e.Namespace,
			Channels: e.Channels, Version: e.Version, ServiceAccount: e.ServiceAccount,
			InstallerRBAC: e.InstallerRBAC, WatchNamespace: e.WatchNamespace,
			UpgradeConstraintPolicy: e.UpgradeConstraintPolicy,
		})
	}
	return o
}

// decodeOLM is the olm target's Kind.Decode: it reads b, the olm block of
// a cluster in publish.yaml, into OLMOptions (the zero value when the
// cluster has none), each ClusterExtension with its file:line (Where).
// Errors: Kind.Decode's; a *BlockError is the first of problems, at the
// line of its key, named clusters.<cluster>.olm.<key>.
func decodeOLM(b Block) (any, error) {
	var y olmBlock
	if b.Node != nil {
		if err := b.Node.Load(&y, yaml.WithKnownFields()); err != nil {
			return nil, err
		}
	}
	o := y.options()
	if ps := o.problems(b.Cluster); len(ps) > 0 {
		return nil, &BlockError{Line: b.line(ps[0].keys...), Msg: "clusters." + b.Cluster + "." + OLM + "." + ps[0].msg}
	}
	for i := range o.Extensions {
		o.Extensions[i].Where = fmt.Sprintf("%s:%d", b.File, b.line("clusterExtensions", strconv.Itoa(i)))
	}
	return o, nil
}

// olmProblem is a value of OLMOptions the olm target refuses: msg starts
// with the path of its field below clusters.<cluster>.olm
// ("catalogKinds: ..."), and keys lead to that field in the block (for
// Block.Line).
type olmProblem struct {
	keys []string
	msg  string
}

// problemImage stands for the catalog image where the rules build an
// object to check the settings, before the image exists: a reference by
// digest (by tag when the ClusterCatalog polls).
const problemImage = "example.invalid/catalog@sha256:0000000000000000000000000000000000000000000000000000000000000000"

// problems returns what is wrong with o for cluster, in the order of the
// block's fields: the rules publish.yaml is held to when it is read
// (decodeOLM, which reports the first at its line) and that Check applies
// again to settings built in code (all of them). They build each object
// the settings describe (internal/olm) with a stand-in image
// (problemImage), so that the rules are internal/olm's own.
func (o OLMOptions) problems(cluster string) []olmProblem {
	var ps []olmProblem
	add := func(msg string, keys ...string) { ps = append(ps, olmProblem{keys: keys, msg: msg}) }
	if _, err := olm.ParseFormat(string(o.BundleFormat)); err != nil {
		add(fmt.Sprintf("bundleFormat: %v", err), "bundleFormat")
	}
	if _, err := ParseDeprecationPeriod(o.DeprecationPeriod); err != nil {
		add(err.Error(), "deprecationPeriod")
	}
	switch o.Channels {
	case "", ChannelsBundles, ChannelsSemver:
	default:
		add(fmt.Sprintf("channels: %q: want %s (the default: the channels the bundles name) or %s (opm's semver template)", o.Channels, ChannelsBundles, ChannelsSemver), "channels")
	}
	if _, err := olm.ParseStream(o.DefaultChannelType); err != nil {
		add(err.Error(), "defaultChannelTypePreference")
	} else if o.DefaultChannelType != "" && o.Channels != ChannelsSemver {
		add(fmt.Sprintf("defaultChannelTypePreference is set, but channels is not %s: set channels: %s, or remove it", ChannelsSemver, ChannelsSemver), "defaultChannelTypePreference")
	}
	// One CatalogSource field at a time, so that the problem names it
	// (catalogSource.pollInterval).
	cs := o.Source
	for _, f := range []struct {
		key, v string
		set    func(*olm.SourceOptions)
	}{
		{"name", cs.Name, func(so *olm.SourceOptions) { so.Name = cs.Name }},
		{"namespace", cs.Namespace, func(so *olm.SourceOptions) { so.Namespace = cs.Namespace }},
		{"pollInterval", cs.PollInterval, func(so *olm.SourceOptions) { so.PollInterval = cs.PollInterval }},
	} {
		if f.v == "" {
			continue
		}
		so := olm.SourceOptions{Image: problemImage}
		f.set(&so)
		if _, err := olm.CatalogSource(so); err != nil {
			add(fmt.Sprintf("catalogSource.%s: %v", f.key, err), "catalogSource", f.key)
		}
	}
	v1 := false
	for i, k := range o.CatalogKinds {
		switch k {
		case KindCatalogSource:
		case KindClusterCatalog:
			v1 = true
		default:
			add(fmt.Sprintf("catalogKinds: %q: want %s, %s or both", k, KindCatalogSource, KindClusterCatalog), "catalogKinds", strconv.Itoa(i))
		}
	}
	if co := o.ClusterCatalog; co != (olm.CatalogOptions{}) || v1 {
		co.Image = problemImage
		if co.PollIntervalMinutes > 0 {
			co.Image = "example.invalid/catalog:" + cluster
		}
		if _, err := olm.ClusterCatalog(co); err != nil {
			add(fmt.Sprintf("clusterCatalog: %v", err), "clusterCatalog")
		}
		if !v1 {
			add(fmt.Sprintf("clusterCatalog is set, but catalogKinds does not include %s: add it, or remove clusterCatalog", KindClusterCatalog), "clusterCatalog")
		}
	}
	for i, k := range o.Redirect {
		if !slices.Contains(olm.RedirectKinds, k) {
			add(fmt.Sprintf("imageRedirection: %q: want some of %s", k, strings.Join(olm.RedirectKinds, ", ")), "imageRedirection", strconv.Itoa(i))
		}
	}
	if len(o.Extensions) > 0 && !v1 {
		add(fmt.Sprintf("clusterExtensions need catalogKinds to include %s (OLM v1 installs from a ClusterCatalog)", KindClusterCatalog), "clusterExtensions")
	}
	names := map[string]bool{}
	for i, e := range o.Extensions {
		if _, err := olm.ClusterExtension(e); err != nil {
			add(fmt.Sprintf("clusterExtensions[%d]: %v", i, err), "clusterExtensions", strconv.Itoa(i))
		}
		n := e.Name
		if n == "" {
			n = e.Package
		}
		if names[n] {
			add(fmt.Sprintf("clusterExtensions[%d]: a second ClusterExtension named %s: give one a name", i, n), "clusterExtensions", strconv.Itoa(i))
		}
		names[n] = true
	}
	return ps
}

// referenceProblems returns the image references of o that cannot be
// parsed: the base image, the catalog image (a repository with an
// optional tag) and OLM's own images. Only Check applies them, before a
// run pushes anything; reading publish.yaml does not, so that the
// commands that push nothing (plan, render, lint) take a file whose
// references are still to fix.
func (o OLMOptions) referenceProblems() []olmProblem {
	var ps []olmProblem
	base := o.base()
	if _, err := name.ParseReference(base); err != nil {
		ps = append(ps, olmProblem{keys: []string{"baseImage"}, msg: fmt.Sprintf("baseImage %q: %v", base, err)})
	}
	if o.CatalogImage != "" {
		if _, err := name.ParseReference(o.CatalogImage); err != nil || strings.Contains(o.CatalogImage, "@") {
			ps = append(ps, olmProblem{keys: []string{"catalogImage"}, msg: fmt.Sprintf("catalogImage %q: want a repository with an optional tag, such as registry.local/olm/catalog", o.CatalogImage)})
		}
	}
	for i, img := range o.Images {
		if _, err := name.ParseReference(img); err != nil {
			ps = append(ps, olmProblem{keys: []string{"images", strconv.Itoa(i)}, msg: fmt.Sprintf("images: %q: %v", img, err)})
		}
	}
	return ps
}

// base is the catalog base image: BaseImage, default DefaultOPMImage.
func (o OLMOptions) base() string {
	if o.BaseImage != "" {
		return o.BaseImage
	}
	return DefaultOPMImage
}
