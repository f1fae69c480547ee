package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
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
	bundles map[model.Key]*bundle.Bundle
	// reused holds the entries of the last catalog image for unchanged
	// versions.
	reused map[model.Key]olm.Entry
	// where names each version's manifest (file:line of spec.artifact).
	where map[model.Key]string
}

// checkTarget rejects an unknown target.
func checkTarget(t string) error {
	switch t {
	case "", TargetAlauda, TargetOLM:
		return nil
	}
	return inputErr(fmt.Errorf("target %q: want %s or %s (--target, publish.yaml clusters.<cluster>.target)", t, TargetAlauda, TargetOLM))
}

// checkTarget checks the target and, for olm, its settings, before any
// side effect: a wrong poll interval or image reference in publish.yaml
// stops the run before anything is mirrored.
func (o *Options) checkTarget() error {
	if err := checkTarget(o.Target); err != nil || o.Target != TargetOLM {
		return err
	}
	var errs []error
	so := o.OLM.Source
	so.Image = "example.invalid/catalog@sha256:" + strings.Repeat("0", 64)
	if _, err := olm.CatalogSource(so); err != nil {
		errs = append(errs, err)
	}
	if _, err := name.ParseReference(o.olmBase()); err != nil {
		errs = append(errs, fmt.Errorf("baseImage %q: %w", o.olmBase(), err))
	}
	if o.OLM.CatalogImage != "" {
		if _, err := name.ParseReference(o.OLM.CatalogImage); err != nil || strings.Contains(o.OLM.CatalogImage, "@") {
			errs = append(errs, fmt.Errorf("catalogImage %q: want a repository with an optional tag, such as registry.local/olm/catalog", o.OLM.CatalogImage))
		}
	}
	for _, img := range o.OLM.Images {
		if _, err := name.ParseReference(img); err != nil {
			errs = append(errs, fmt.Errorf("images: %q: %w", img, err))
		}
	}
	if len(errs) > 0 {
		return inputErr(fmt.Errorf("publish.yaml clusters.%s.olm: %w", o.Cluster, errors.Join(errs...)))
	}
	return nil
}

// olmImages returns the images the olm target mirrors besides the
// bundles and their related images: the catalog base image and OLM's own
// images.
func (o *Options) olmImages() []string {
	if o.Target != TargetOLM {
		return nil
	}
	return append([]string{o.olmBase()}, o.OLM.Images...)
}

func (o *Options) olmBase() string {
	if o.OLM.BaseImage != "" {
		return o.OLM.BaseImage
	}
	return DefaultOPMImage
}

// prepareOLM gathers what the catalog needs of the versions this run did
// not read (unchanged since the last publish): the catalog holds every
// present version. Their olm.bundle entries are taken from the catalog
// image recorded in publish/state.yaml when it has them (same bundle image
// by digest); the other bundles are read from the source. Bundle errors are
// input errors naming the manifest.
func (r *run) prepareOLM(ctx context.Context, vs []*model.Version, state *gitops.State) error {
	if r.Target != TargetOLM {
		return nil
	}
	mc := r.mc
	run := &olmRun{mc: mc, bundles: map[model.Key]*bundle.Bundle{}, reused: map[model.Key]olm.Entry{}, where: map[model.Key]string{}}
	for _, v := range vs {
		run.where[v.Key()] = v.Where()
	}
	prev := r.previousCatalog(ctx, mc, state)
	digests := map[[2]string]string{} // artifact, tag -> bundle digest at the last publish
	for _, a := range state.Artifacts {
		for _, v := range a.Versions {
			digests[[2]string{a.Name, v.Tag}] = v.BundleDigest
		}
	}
	var unread []*model.Version
	for _, v := range vs {
		if v.Changed && v.Bundle != nil {
			continue
		}
		m := v.Manifest
		if d := digests[[2]string{m.Artifact, m.Tag()}]; d != "" && prev != nil {
			if ref, err := mc.ParseReference(m.Spec.Artifact); err == nil {
				if e, ok := prev.Entry(mc.DstHost() + "/" + mc.DestinationRepository(ref) + "@" + d); ok {
					run.reused[v.Key()] = e
					continue
				}
			}
		}
		unread = append(unread, v)
	}
	if err := readBundles(ctx, mc, unread); err != nil {
		return err
	}
	var errs []error
	for _, v := range vs {
		if v.BundleErr != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v.Where(), v.BundleErr))
			continue
		}
		if v.Bundle != nil {
			run.bundles[v.Key()] = v.Bundle
		}
	}
	if len(errs) > 0 {
		return inputErr(errors.Join(errs...))
	}
	if n := len(unread); n > 0 || len(run.reused) > 0 {
		r.logf("olm: %d unchanged bundles taken from the last catalog image, %d read again", len(run.reused), n)
	}
	r.olm = run
	return nil
}

// previousCatalog reads the catalog image of the cluster's last publish
// (nil when there is none or it cannot be read: then every bundle is read
// again, which is slower but gives the same catalog).
func (o *Options) previousCatalog(ctx context.Context, mc *mirror.Client, state *gitops.State) *olm.Previous {
	key := state.Rendered[o.Cluster]
	if !strings.HasPrefix(key, olmKeyPrefix) {
		return nil
	}
	ref, err := mc.ParseReference(strings.TrimPrefix(key, olmKeyPrefix))
	if err == nil {
		var prev *olm.Previous
		if prev, err = olm.LoadPrevious(ctx, ref, mc.DstOptions()...); err == nil {
			return prev
		}
	}
	o.warnf("the last catalog image %s cannot be read (%v): the unchanged bundles are read again", strings.TrimPrefix(key, olmKeyPrefix), err)
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
func (r *run) renderCluster(ctx context.Context, root string, arts []model.ArtifactRecord, prevKey string) (string, error) {
	o := r.Options
	if o.Target != TargetOLM {
		return RenderInto(root, o.Cluster, o.Render, arts, prevKey)
	}
	if r.olm == nil {
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
			k := model.Key{Artifact: a.Name, Version: v.Version}
			image := a.Registry + "/" + a.Repository + "@" + v.BundleDigest
			if e, ok := r.olm.reused[k]; ok && e.Image == image && r.olm.bundles[k] == nil {
				e.Source = r.olm.where[k]
				p.Entries = append(p.Entries, e)
				continue
			}
			b := r.olm.bundles[k]
			if b == nil || v.BundleDigest == "" {
				return "", fmt.Errorf("olm target: %s %s is listed but its bundle was not read or mirrored", a.Name, v.Version)
			}
			p.Entries = append(p.Entries, olm.Entry{Bundle: b, Image: image, Source: r.olm.where[k]})
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
	dst, err := o.catalogRef(r.olm.mc)
	if err != nil {
		return "", err
	}
	baseSrc, err := r.olm.mc.ParseReference(o.olmBase())
	if err != nil {
		return "", inputErr(fmt.Errorf("catalog base image %q: %w", o.olmBase(), err))
	}
	base, err := r.olm.mc.Destination(baseSrc)
	if err != nil {
		return "", err
	}
	digest, err := olm.Push(ctx, base, dst, files, r.olm.mc.DstOptions()...)
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
