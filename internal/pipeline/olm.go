package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/render"
)

// Targets: what a cluster runs (publish.yaml clusters.<name>.target,
// --target).
const (
	TargetAlauda = "alauda" // Artifact and ArtifactVersion objects (default)
	TargetOLM    = "olm"    // upstream OLM: catalog image and CatalogSource
)

// DefaultOPMImage is the catalog base image when publish.yaml names none:
// the opm release whose file-based catalog format and serve cache the
// catalog is built for (operator-registry v1.60.0).
const DefaultOPMImage = "quay.io/operator-framework/opm:v1.60.0"

// CatalogSourceFile is the CatalogSource's file below rendered/<cluster>/.
const CatalogSourceFile = "catalogsource.yaml"

// olmKeyPrefix starts the render key of an olm cluster in
// publish/state.yaml: "olm <catalog image>@sha256:...".
const olmKeyPrefix = "olm "

// OLMOptions configures the olm target (publish.yaml
// clusters.<cluster>.olm).
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
}

// olmRun carries what the olm target needs from the run to the render:
// every present version's bundle.
type olmRun struct {
	mc      *mirror.Client
	bundles map[[2]string]*bundle.Bundle // by artifact and version
}

// checkTarget rejects an unknown target.
func checkTarget(t string) error {
	switch t {
	case "", TargetAlauda, TargetOLM:
		return nil
	}
	return inputErr(fmt.Errorf("target %q: want %s or %s (--target, publish.yaml clusters.<cluster>.target)", t, TargetAlauda, TargetOLM))
}

// olmTargets returns the images the olm target mirrors besides the
// bundles and their related images: the catalog base image and OLM's own
// images.
func (o *Options) olmTargets() []mirror.Target {
	if o.Target != TargetOLM {
		return nil
	}
	var ts []mirror.Target
	for _, r := range append([]string{o.olmBase()}, o.OLM.Images...) {
		ts = append(ts, mirror.Target{Ref: r})
	}
	return ts
}

func (o *Options) olmBase() string {
	if o.OLM.BaseImage != "" {
		return o.OLM.BaseImage
	}
	return DefaultOPMImage
}

// prepareOLM reads the bundles of the versions this run did not read
// (unchanged since the last publish): the catalog holds every present
// version. Bundle errors are input errors naming the manifest.
func (o *Options) prepareOLM(ctx context.Context, mc *mirror.Client, ms []*manifest.PackageManifest, bundles []*bundle.Bundle, work []bool) error {
	if o.Target != TargetOLM {
		return nil
	}
	rest := make([]bool, len(ms))
	for i := range ms {
		rest[i] = !work[i] || bundles[i] == nil
	}
	more, byErr, err := readBundles(ctx, mc, ms, rest)
	if err != nil {
		return err
	}
	run := &olmRun{mc: mc, bundles: map[[2]string]*bundle.Bundle{}}
	var errs []error
	for i, m := range ms {
		b := bundles[i]
		if rest[i] {
			b = more[i]
		}
		if e := byErr[m.Path]; e != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", m.Path, m.Lines["spec.artifact"], e))
			continue
		}
		run.bundles[[2]string{m.Artifact, m.Version.String()}] = b
	}
	if len(errs) > 0 {
		return inputErr(errors.Join(errs...))
	}
	if n := count(rest); n > 0 {
		o.logf("olm: %d unchanged bundles read for the catalog", n)
	}
	o.olm = run
	return nil
}

// catalogRef is where the catalog image is pushed.
func (o *Options) catalogRef(mc *mirror.Client) (name.Tag, error) {
	ref := o.OLM.CatalogImage
	if ref == "" {
		src, err := name.ParseReference("olm/publish-catalog:" + o.Cluster)
		if err != nil {
			return name.Tag{}, err
		}
		d, err := mc.Destination(src)
		if err != nil {
			return name.Tag{}, err
		}
		ref = d.String()
	}
	var nopts []name.Option
	if mc != nil && o.Mirror.PlainHTTP {
		nopts = append(nopts, name.Insecure)
	}
	if !strings.Contains(ref[strings.LastIndex(ref, "/")+1:], ":") {
		ref += ":" + o.Cluster
	}
	t, err := name.NewTag(ref, nopts...)
	if err != nil {
		return name.Tag{}, inputErr(fmt.Errorf("catalog image %q (publish.yaml clusters.%s.olm.catalogImage): %w", o.OLM.CatalogImage, o.Cluster, err))
	}
	return t, nil
}

// renderCluster writes rendered/<cluster> for the cluster's target and
// returns the render key to record: RenderInto for alauda; for olm the
// catalog image is built from every present version of arts, pushed, and
// rendered/<cluster>/catalogsource.yaml points at it by digest (the key is
// "olm <image by digest>").
func (o *Options) renderCluster(ctx context.Context, root string, arts []render.Artifact, prevKey string) (string, error) {
	if o.Target != TargetOLM {
		return RenderInto(root, o.Cluster, o.Render, arts, prevKey)
	}
	if o.olm == nil {
		return "", errors.New("olm target: the bundles were not read")
	}
	var pkgs []olm.Package
	for _, a := range arts {
		if !a.Present {
			continue // delisted artifact: the package leaves the catalog
		}
		p := olm.Package{Name: a.Name}
		for _, v := range a.Versions {
			if !v.Present {
				continue // delisted version: the bundle leaves the catalog
			}
			b := o.olm.bundles[[2]string{a.Name, v.Version}]
			if b == nil || v.BundleDigest == "" {
				return "", fmt.Errorf("olm target: %s %s is listed but its bundle was not read or mirrored", a.Name, v.Version)
			}
			p.Entries = append(p.Entries, olm.Entry{Bundle: b, Image: a.Registry + "/" + a.Repository + "@" + v.BundleDigest})
		}
		pkgs = append(pkgs, p)
	}
	cfg, err := olm.Build(pkgs)
	if err != nil {
		return "", inputErr(err)
	}
	files, err := olm.Files(cfg)
	if err != nil {
		return "", err
	}
	dst, err := o.catalogRef(o.olm.mc)
	if err != nil {
		return "", err
	}
	baseSrc, err := o.olm.mc.ParseReference(o.olmBase())
	if err != nil {
		return "", inputErr(fmt.Errorf("catalog base image %q: %w", o.olmBase(), err))
	}
	base, err := o.olm.mc.Destination(baseSrc)
	if err != nil {
		return "", err
	}
	digest, err := olm.Push(ctx, base, dst, files, o.olm.mc.DstOptions()...)
	if err != nil {
		return "", err
	}
	o.logf("olm: catalog image %s (%d packages, %d bundles)", digest, len(cfg.Packages), len(cfg.Bundles))
	if err := writeCatalogSource(root, o.Cluster, o.OLM.Source, o.Render.ImagePullSecrets, digest.String()); err != nil {
		return "", err
	}
	return olmKeyPrefix + digest.String(), nil
}

// writeCatalogSource replaces rendered/<cluster> by the CatalogSource of
// image.
func writeCatalogSource(root, cluster string, so olm.SourceOptions, secrets []string, image string) error {
	so.Image = image
	if len(so.Secrets) == 0 {
		so.Secrets = secrets
	}
	data, err := olm.CatalogSource(so)
	if err != nil {
		return inputErr(fmt.Errorf("publish.yaml clusters.%s.olm.catalogSource: %w", cluster, err))
	}
	dir := render.RenderedDir + "/" + cluster
	return render.Write(root, []string{dir}, render.Files{dir + "/" + CatalogSourceFile: data})
}

// renderOLMFromState renders the CatalogSource of an olm cluster from the
// catalog image recorded in publish/state.yaml (`publish render`: no
// registry access, so the catalog image is not rebuilt).
func renderOLMFromState(root, cluster string, so olm.SourceOptions, secrets []string, state *gitops.State) error {
	key := state.Rendered[cluster]
	if !strings.HasPrefix(key, olmKeyPrefix) {
		return inputErr(fmt.Errorf("cluster %s has no catalog image in publish/state.yaml yet: `publish run --target olm` builds and pushes it first", cluster))
	}
	return writeCatalogSource(root, cluster, so, secrets, strings.TrimPrefix(key, olmKeyPrefix))
}
