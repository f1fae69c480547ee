package main

import (
	"strings"

	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/ocicatalog"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/rollout"
	"github.com/operator-publish/publish/internal/target"
	"github.com/spf13/pflag"
)

// renderFlags are what the catalog is rendered for: --cluster, --target,
// --namespace, --library, --image-pull-secret (run, plan, render, push
// --catalog; lint renders nothing and has none).
type renderFlags struct {
	cluster, target    string
	clusters           []string
	namespace, library string
	pullSecrets        []string
	fs                 *pflag.FlagSet
}

func (r *renderFlags) register(fs *pflag.FlagSet) {
	r.fs = fs
	r.registerCluster(fs, "", "cluster overlay: kustomize/clusters/<cluster> in the catalog repo, rendered to rendered/<cluster> (default: publish.yaml cluster:, else global)")
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
	// Caps are the target's capabilities (target.Kind).
	Caps   target.Capabilities
	Render render.Config
	// TargetSettings are the target's own settings, from its block of
	// publish.yaml clusters.<cluster> (config.TargetSettings; nil: none).
	TargetSettings any
	// Include, Exclude and DstRegistry are publish.yaml
	// clusters.<cluster>'s (pipeline.ClusterOptions).
	Include, Exclude []string
	DstRegistry      string
	// Delivery and PullRequest are the cluster's delivery
	// (deliveryFlags.apply: --delivery, else publish.yaml).
	Delivery    string
	PullRequest pipeline.PullRequestOptions
	// After are publish.yaml clusters.<cluster>.after, the cluster's gates.
	After []rollout.Gate
}

// clusterOptions is the pipeline's view of rs, with its OCI reference.
func (rs renderSettings) clusterOptions(oci string) pipeline.ClusterOptions {
	return pipeline.ClusterOptions{
		Name: rs.Cluster, Target: rs.Target, TargetSettings: rs.TargetSettings, OCI: oci, Render: rs.Render,
		Include: rs.Include, Exclude: rs.Exclude, DstRegistry: rs.DstRegistry,
		Delivery: rs.Delivery, PullRequest: rs.PullRequest, After: rs.After,
	}
}

// registerClusters adds --clusters: the commands that serve several
// clusters in one run (run, plan, render).
func (r *renderFlags) registerClusters(fs *pflag.FlagSet) {
	fs.StringSliceVar(&r.clusters, "clusters", nil, "serve these clusters of publish.yaml (comma-separated; violet's flag) (default: publish.yaml cluster:, else every cluster publish.yaml declares, else global)")
}

// resolve checks the flags and resolves the one cluster of a command that
// serves one: --cluster, else publish.yaml cluster: (its first), else
// global; and its target: --target, else publish.yaml
// clusters.<cluster>.target (cfg, nil for none), else alauda. Errors are
// usage errors (exit 2) naming the flag.
func (r *renderFlags) resolve(cfg *config.Config) (renderSettings, error) {
	cluster := r.cluster
	if cluster == "" {
		cluster = "global"
		if d := cfg.DefaultClusters(); len(d) > 0 {
			cluster = d[0]
		}
	}
	return r.resolveOne(cfg, cluster, "--cluster")
}

func (r *renderFlags) resolveOne(cfg *config.Config, cluster, flag string) (renderSettings, error) {
	if cluster == "" || strings.ContainsAny(cluster, `/\`) || cluster == "." || cluster == ".." {
		return renderSettings{}, usagef("%s %q: want a plain overlay name such as global (kustomize/clusters/<name>)", flag, cluster)
	}
	name := r.target
	if name == "" {
		name = cfg.Target(cluster)
	}
	k, err := target.Lookup(name)
	if err != nil {
		return renderSettings{}, &usageError{err}
	}
	cs := cfg.ClusterSettings(cluster)
	rc := render.Config{Namespace: r.namespace, Library: r.library, ImagePullSecrets: r.pullSecrets}
	if cs.Namespace != "" {
		rc.Namespace = cs.Namespace
	}
	if cs.Library != "" {
		rc.Library = cs.Library
	}
	if len(cs.ImagePullSecrets) > 0 {
		rc.ImagePullSecrets = cs.ImagePullSecrets
	}
	rc.ChartGitURL = cs.ChartGitURL
	if cs.ChartRepo != nil {
		rc.ChartRepo = *cs.ChartRepo
	}
	rc.RewriteImages = cs.RewriteImages
	return renderSettings{
		Cluster:        cluster,
		Target:         k.Name,
		Caps:           k.Caps,
		Render:         rc,
		TargetSettings: cfg.TargetSettings(cluster, k.Name),
		Include:        cs.Include,
		Exclude:        cs.Exclude,
		DstRegistry:    cs.DstRegistry,
		After:          gatesOf(cs.After),
	}, nil
}

// resolveClusters resolves the clusters of a command that serves several
// (run, plan, render): --cluster X (one); else --clusters a,b, each of
// which publish.yaml must declare (global needs no declaration when
// publish.yaml declares none); else publish.yaml cluster:; else every
// cluster publish.yaml declares (clusters:), sorted; else global. Each
// gets its publish.yaml clusters.<name> settings, the flags as defaults.
// Errors are usage errors naming the flag and publish.yaml.
func (r *renderFlags) resolveClusters(cfg *config.Config) ([]renderSettings, error) {
	var names []string
	flag := "--cluster"
	declared := cfg.ClusterNames()
	switch {
	case r.cluster != "" && len(r.clusters) > 0:
		return nil, usagef("--cluster %s and --clusters %s: give one of them", r.cluster, strings.Join(r.clusters, ","))
	case r.cluster != "":
		names = []string{r.cluster}
	case len(r.clusters) > 0:
		flag = "--clusters"
		known := map[string]bool{}
		for _, n := range declared {
			known[n] = true
		}
		if len(declared) == 0 {
			known["global"] = true
		}
		for _, n := range r.clusters {
			n = strings.TrimSpace(n)
			if !known[n] {
				where := config.FileName + " declares no cluster (only global is served without a clusters: section)"
				if len(declared) > 0 {
					where = config.FileName + " declares " + strings.Join(declared, ", ")
				}
				if cfg != nil && cfg.Path != "" {
					where = strings.Replace(where, config.FileName, cfg.Path, 1)
				}
				return nil, usagef("--clusters: cluster %q is not declared in publish.yaml (%s): add clusters.%s to publish.yaml, or fix --clusters", n, where, n)
			}
			names = append(names, n)
		}
	case len(cfg.DefaultClusters()) > 0:
		names = cfg.DefaultClusters()
		flag = "publish.yaml cluster:"
	case len(declared) > 0:
		names = declared
		flag = "publish.yaml clusters:"
	default:
		names = []string{"global"}
	}
	seen := map[string]bool{}
	var out []renderSettings
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		rs, err := r.resolveOne(cfg, n, flag)
		if err != nil {
			return nil, err
		}
		out = append(out, rs)
	}
	return out, nil
}

// ociFlags are the OCI catalog of the cluster: --oci (run, push). The
// reference resolves per cluster as --target does: --oci (or PUBLISH_OCI,
// the action's oci input), else publish.yaml clusters.<cluster>.oci.
type ociFlags struct {
	ref   string
	noOCI bool
}

func (f *ociFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.noOCI, "no-oci", false, "stop pushing the OCI catalog of a cluster whose state records one (without it, a run with no --oci keeps pushing to the recorded reference); the record leaves the state")
	fs.StringVar(&f.ref, "oci", "", "also push rendered/<cluster> as an OCI artifact (Flux OCIRepository, Argo CD OCI source) to REGISTRY/REPOSITORY[:TAG] (tag default: the cluster name), with the destination registry's credentials and TLS settings; its digest goes into the catalog state (publish/state/) (default: publish.yaml clusters.<cluster>.oci)")
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

// gatesOf is the pipeline's view of publish.yaml clusters.<name>.after.
func gatesOf(after config.Gates) []rollout.Gate {
	var out []rollout.Gate
	for _, g := range after {
		out = append(out, rollout.Gate{Cluster: g.Cluster, Soak: g.SoakTime, Healthy: g.Healthy})
	}
	return out
}
