package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/target"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commonFlags are the flags run and render share.
type commonFlags struct {
	source, packagesDir, cluster string
	dstRegistry                  string
	plainHTTP                    bool
	namespace, library           string
	pullSecrets                  []string
	configFile                   string
	target                       string
}

func (c *commonFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.source, "source", ".", "package repo checkout")
	fs.StringVar(&c.packagesDir, "packages-dir", "packages", "directory of PackageManifests, relative to --source")
	fs.StringVar(&c.cluster, "cluster", "global", "cluster overlay: kustomize/clusters/<cluster> in the catalog repo, rendered to rendered/<cluster>")
	fs.StringVar(&c.dstRegistry, "dst-registry", "", "destination registry HOST[:PORT][/PREFIX]")
	fs.BoolVar(&c.plainHTTP, "plain-http", false, "use plain HTTP for the source and destination registries")
	fs.BoolVar(&c.plainHTTP, "plain", false, "alias of --plain-http (violet)")
	fs.StringVar(&c.namespace, "namespace", "cpaas-system", "namespace of the Artifact and ArtifactVersion objects")
	fs.StringVar(&c.library, "library", "platform", "value of the cpaas.io/library label")
	fs.StringSliceVar(&c.pullSecrets, "image-pull-secret", nil, "Artifact spec.imagePullSecrets entry (repeatable)")
	fs.StringVar(&c.configFile, "config", "", "publish.yaml to read (default: publish.yaml at the root of --source, when present)")
	fs.StringVar(&c.target, "target", "", "what the cluster runs: alauda (Artifact and ArtifactVersion objects) or olm (upstream OLM: catalog image and CatalogSource) (default: publish.yaml clusters.<cluster>.target, else alauda)")
}

// check rejects flag values that cannot work (exit code 2).
func (c *commonFlags) check() error {
	if c.cluster == "" || strings.ContainsAny(c.cluster, `/\`) || c.cluster == "." || c.cluster == ".." {
		return &usageError{fmt.Errorf("--cluster %q: want a plain overlay name such as global (kustomize/clusters/<name>)", c.cluster)}
	}
	if c.packagesDir == "" {
		return &usageError{fmt.Errorf("--packages-dir must not be empty")}
	}
	if c.target == "" {
		c.target = loadedConfig.Target(c.cluster)
	}
	k, err := target.Lookup(c.target)
	if err != nil {
		return &usageError{err}
	}
	c.target = k.Name
	return nil
}

// olmOptions returns the olm target's settings for the cluster from
// publish.yaml (clusters.<cluster>.olm).
func (c *commonFlags) olmOptions() pipeline.OLMOptions {
	o := loadedConfig.ClusterOLM(c.cluster)
	cs := o.CatalogSource
	return pipeline.OLMOptions{
		CatalogImage: o.CatalogImage, BaseImage: o.BaseImage, Images: o.Images,
		Source: olm.SourceOptions{Name: cs.Name, Namespace: cs.Namespace, DisplayName: cs.DisplayName, Publisher: cs.Publisher, PollInterval: cs.PollInterval},
	}
}

func (c *commonFlags) renderConfig() render.Config {
	return render.Config{Namespace: c.namespace, Library: c.library, ImagePullSecrets: c.pullSecrets}
}

func newRunCmd() *cobra.Command {
	var (
		c commonFlags
		o pipeline.Options
		r remoteFlags
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Publish the package repo: mirror bundles and related images, render and push the catalog",
		Long: `run scans the PackageManifests of the package repo, reads every bundle image,
mirrors every related image and then every bundle to --dst-registry (digests
preserved, images already there skipped), renders Artifact and ArtifactVersion
objects through the cluster overlay of the catalog repo, and commits and pushes
the catalog when a byte changed. Versions and artifacts gone from the source
are delisted (present: false), never deleted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags()); err != nil {
				return err
			}
			if err := r.apply(&c, &o); err != nil {
				return err
			}
			if c.dstRegistry == "" {
				return &usageError{fmt.Errorf("--dst-registry HOST[:PORT][/PREFIX] is required")}
			}
			if o.Mirror.Concurrency < 1 {
				return &usageError{fmt.Errorf("--concurrency must be at least 1, not %d", o.Mirror.Concurrency)}
			}
			o.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			res, err := pipeline.Run(cmd.Context(), o)
			if err != nil {
				// stdout says what happened only when it happened.
				return err
			}
			printResult(cmd, res)
			reportRun(cmd, res.Changes, res.Commit)
			return nil
		},
	}
	fs := cmd.Flags()
	c.register(fs)
	r.register(fs, "push")
	fs.IntVar(&o.Mirror.Concurrency, "concurrency", 4, "registry operations in flight at once, for all images and blobs together")
	fs.BoolVar(&o.AllowEmpty, "allow-empty", false, "allow a source without any manifest to delist every artifact")
	fs.StringVar(&o.Base, "base", "", "compare against this source revision (default: the source commit of the last publish, from publish/state.yaml)")
	fs.BoolVar(&o.NoFetch, "no-fetch", false, "never fetch from the package repo's origin to deepen a shallow clone")
	withEnvHelp(fs)
	return cmd
}

func printResult(cmd *cobra.Command, res *pipeline.Result) {
	w := cmd.OutOrStdout()
	ch := res.Changes
	for _, s := range []struct {
		title string
		items []string
	}{{"listed", ch.Listed}, {"upgraded", ch.Upgraded}, {"relisted", ch.Relisted}, {"delisted", ch.Delisted}, {"updated", ch.Updated}} {
		for _, it := range s.items {
			fmt.Fprintf(w, "%-9s %s\n", s.title, it)
		}
	}
	if res.Commit != "" {
		fmt.Fprintf(w, "commit    %s\n", res.Commit)
	} else if res.Superseded != "" {
		fmt.Fprintf(w, "no change: the catalog is already published from a newer source commit, %s\n", res.Superseded)
	} else if res.Mirror != nil {
		fmt.Fprintln(w, "no change: nothing committed")
	}
}
