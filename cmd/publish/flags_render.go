package main

import (
	"github.com/operator-publish/publish/internal/target"
	"strings"

	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/ocicatalog"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/render"
	"github.com/spf13/pflag"
)

// renderFlags are what the catalog is rendered for: --cluster, --target,
// --namespace, --library, --image-pull-secret (run, plan, render, push
// --catalog; lint renders nothing and has none).
type renderFlags struct {
	cluster, target    string
	namespace, library string
	pullSecrets        []string
}

func (r *renderFlags) register(fs *pflag.FlagSet) {
	r.registerCluster(fs, "global", "cluster overlay: kustomize/clusters/<cluster> in the catalog repo, rendered to rendered/<cluster>")
	fs.StringVar(&r.target, "target", "", "what the cluster runs: alauda (Artifact and ArtifactVersion objects) or olm (upstream OLM: catalog image and CatalogSource) (default: publish.yaml clusters.<cluster>.target, else alauda)")
	fs.StringVar(&r.namespace, "namespace", "cpaas-system", "namespace of the Artifact and ArtifactVersion objects")
	fs.StringVar(&r.library, "library", "platform", "value of the cpaas.io/library label")
	fs.StringSliceVar(&r.pullSecrets, "image-pull-secret", nil, "Artifact spec.imagePullSecrets entry (repeatable)")
}

// registerCluster adds --cluster alone, with its default and usage (check:
// no default, every cluster of the catalog).
func (r *renderFlags) registerCluster(fs *pflag.FlagSet, def, usage string) {
	fs.StringVar(&r.cluster, "cluster", def, usage)
}

// renderSettings is what renderFlags resolve to.
type renderSettings struct {
	Cluster string
	Target  string
	Render  render.Config
	OLM     pipeline.OLMOptions
}

// resolve checks the flags and resolves the target: --target, else
// publish.yaml clusters.<cluster>.target (cfg, nil for none), else alauda.
// Errors are usage errors (exit 2) naming the flag.
func (r *renderFlags) resolve(cfg *config.Config) (renderSettings, error) {
	if r.cluster == "" || strings.ContainsAny(r.cluster, `/\`) || r.cluster == "." || r.cluster == ".." {
		return renderSettings{}, usagef("--cluster %q: want a plain overlay name such as global (kustomize/clusters/<name>)", r.cluster)
	}
	name := r.target
	if name == "" {
		name = cfg.Target(r.cluster)
	}
	k, err := target.Lookup(name)
	if err != nil {
		return renderSettings{}, &usageError{err}
	}
	return renderSettings{
		Cluster: r.cluster,
		Target:  k.Name,
		Render:  render.Config{Namespace: r.namespace, Library: r.library, ImagePullSecrets: r.pullSecrets},
		OLM:     cfg.ClusterOLM(r.cluster).TargetOptions(),
	}, nil
}

// ociFlags are the OCI catalog of the cluster: --oci (run, push). The
// reference resolves per cluster as --target does: --oci (or PUBLISH_OCI,
// the action's oci input), else publish.yaml clusters.<cluster>.oci.
type ociFlags struct {
	ref string
}

func (f *ociFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.ref, "oci", "", "also push rendered/<cluster> as an OCI artifact (Flux OCIRepository, Argo CD OCI source) to REGISTRY/REPOSITORY[:TAG] (tag default: the cluster name), with the destination registry's credentials and TLS settings; its digest goes into publish/state.yaml (default: publish.yaml clusters.<cluster>.oci)")
}

// resolve returns the reference for cluster ("" for none). Errors are
// usage errors naming --oci.
func (f *ociFlags) resolve(cfg *config.Config, cluster string) (string, error) {
	if f.ref == "" {
		return cfg.ClusterOCI(cluster), nil // checked when publish.yaml was read
	}
	if _, err := ocicatalog.Tag(f.ref, cluster); err != nil {
		return "", usagef("--oci: %w", err)
	}
	return f.ref, nil
}
