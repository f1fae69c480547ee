package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/importer"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/scaffold"
)

func newImportCmd(inv *invocation) *cobra.Command {
	var (
		source                  sourceFlags
		rf                      renderFlags
		dst                     dstRegistryFlags
		tls                     tlsFlags
		retry                   retryFlags
		cf                      catalogFlags
		commit                  commitFlags
		kubeconfig, kubeContext string
		manifests               string
		dryRun                  bool
		output                  string
	)
	cmd := &cobra.Command{
		Use:   "import --catalog URL --kubeconfig FILE [--manifests-dir DIR]",
		Short: "Take over the Artifacts and ArtifactVersions violet created in a cluster: state, rendered objects, PackageManifests",
		Long: `import reads the Artifacts and ArtifactVersions of --namespace in the cluster
(made by violet or kubectl artifact; get and list only: nothing in the
cluster is changed) and commits to the catalog, as run does (one commit,
pushed), what the first GitOps sync needs to adopt them instead of creating
rivals that the platform leaves Pending with reason AlreadyAdd: an entry of
publish/state/<cluster>.yaml per artifact (registry, repository, every version with
its tag and the name of its ArtifactVersion, which every later render keeps)
and their Artifact and ArtifactVersion objects rendered through the cluster
overlay. With --manifests-dir DIR (the packages directory of the package
repo) it also writes DIR/<artifact>/<version>/manifest.yaml for every listed
version, as publish create writes it from the bundle at the destination
registry (existing files are kept).

Two ArtifactVersions holding one version (the AlreadyAdd case), and an
artifact the catalog already publishes differently, are conflicts: they are
printed with what to do, and nothing is written (exit 1). --dry-run prints
the plan and the catalog files that would change, and writes nothing.

The cluster: --kubeconfig (or $KUBECONFIG, ~/.kube/config), else the
in-cluster service account; it needs get and list on artifacts and
artifactversions (app.alauda.io) in --namespace (docs/after-sync.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "text", "json":
			default:
				return usagef("--output %q: want text or json", output)
			}
			if err := cf.require(); err != nil {
				return err
			}
			rs, err := rf.resolve(inv.config)
			if err != nil {
				return err
			}
			if rs.Target != "" && rs.Target != "alauda" {
				return usagef("--target %s: import reads Alauda Artifacts and ArtifactVersions, for the alauda target only", rs.Target)
			}
			if manifests != "" {
				if fi, err := os.Stat(manifests); err != nil || !fi.IsDir() {
					return usagef("--manifests-dir %s: not a directory (want the packages directory of the package repo checkout)", manifests)
				}
			}
			var o pipeline.Options
			o.Cluster, o.Target, o.Render = rs.Cluster, rs.Target, rs.Render
			o.Log = inv.log
			reg := registryFlags{dst: &dst, tls: &tls, retry: &retry}
			if err := reg.apply(&o.Mirror); err != nil {
				return err
			}
			if o.Catalog, err = cf.options(&tls); err != nil {
				return err
			}
			if _, err := commit.apply(&o.Catalog); err != nil {
				return err
			}
			ns := o.Render.Namespace
			if ns == "" {
				ns = "cpaas-system"
			}
			client, err := kubeClient(kubeconfig, kubeContext, "operator-publish import")
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			found, err := importer.Read(ctx, client, ns)
			if err != nil {
				return err
			}
			inv.logf("import: %d Artifacts and %d ArtifactVersions in namespace %s", len(found.Artifacts), len(found.Versions), ns)
			var plan *importer.Plan
			var sk *importer.Skeletons
			// The bundles are read at the destination registry, with the
			// destination credentials.
			m := o.Mirror
			m.Src = m.Dst
			// Registry errors name the flags import has.
			m.Flags = registry.Flags{Src: registry.CredentialFlags{Username: "--dst-username", Password: "--dst-password"}, CA: "--ca-file", Insecure: "--insecure", PlainHTTP: "--plain-http"}
			res, err := pipeline.Import(ctx, o, pipeline.ImportOptions{
				DryRun: dryRun,
				Plan: func(state *gitops.State) ([]model.ArtifactRecord, error) {
					plan = importer.MakePlan(found, state.Artifacts, importer.Options{Render: o.Render})
					if len(plan.Conflicts) > 0 {
						return nil, &pipeline.InputError{Err: &importer.ConflictError{Conflicts: plan.Conflicts}}
					}
					return plan.Artifacts, nil
				},
				BeforeCommit: func(ctx context.Context) error {
					if manifests == "" {
						return nil
					}
					var err error
					sk, err = importer.Stage(ctx, plan.Artifacts, manifests, m)
					var ie *scaffold.InputError
					if errors.As(err, &ie) {
						return &pipeline.InputError{Err: err}
					}
					return err
				},
				Describe: describe(found.Namespace, rs.Cluster),
			})
			if plan != nil {
				if output == "json" {
					enc := json.NewEncoder(cmd.OutOrStdout())
					enc.SetIndent("", "  ")
					if eerr := enc.Encode(struct {
						*importer.Plan
						DryRun bool     `json:"dryRun"`
						Files  []string `json:"files,omitempty"`
						Commit string   `json:"commit,omitempty"`
					}{plan, dryRun, filesOf(res), commitOf(res)}); eerr != nil {
						return eerr
					}
				} else {
					plan.Print(cmd.OutOrStdout(), dryRun)
				}
			}
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if output == "text" {
				for _, f := range res.Files {
					verb := "write"
					if dryRun {
						verb = "would write"
					}
					fmt.Fprintf(w, "%s catalog %s\n", verb, f)
				}
			}
			if dryRun {
				if manifests != "" && output == "text" {
					for _, a := range plan.Artifacts {
						for _, v := range a.Versions {
							if a.Present && v.Present {
								fmt.Fprintf(w, "would write %s (publish create of %s/%s:%s)\n", filepath.Join(manifests, a.Name, v.Version, "manifest.yaml"), a.Registry, a.Repository, v.Tag)
							}
						}
					}
				}
				fmt.Fprintln(w, "dry run: nothing written")
				return nil
			}
			if sk != nil {
				if err := sk.Write(); err != nil {
					return fmt.Errorf("%w (the catalog commit %s is pushed; run publish create for the missing manifests)", err, res.Commit)
				}
				if output == "text" {
					for _, p := range sk.Paths() {
						fmt.Fprintf(w, "created   %s\n", filepath.Join(manifests, filepath.FromSlash(p)))
					}
					for _, p := range sk.Kept {
						fmt.Fprintf(w, "kept      %s (exists)\n", filepath.Join(manifests, filepath.FromSlash(p)))
					}
				}
			}
			if output == "text" {
				if res.Commit != "" {
					fmt.Fprintf(w, "commit    %s\n", res.Commit)
				} else {
					fmt.Fprintln(w, "no change: nothing committed")
				}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)")
	fs.StringVar(&kubeContext, "context", "", "kubeconfig context (default: the current one)")
	fs.StringVar(&manifests, "manifests-dir", "", "write a PackageManifest per imported version into DIR/<artifact>/<version>/manifest.yaml (the packages directory of the package repo); existing files are kept")
	fs.BoolVar(&dryRun, "dry-run", false, "print the plan and the files that would change; write nothing")
	fs.StringVarP(&output, "output", "o", "text", "text or json")
	source.registerConfig(fs)
	rf.register(fs)
	dst.registerCreds(fs, "read access, to read the bundles for --manifests-dir")
	tls.register(fs)
	retry.register(fs)
	cf.register(fs, "push", "catalog Git repo: URL or local path")
	commit.register(fs)
	withEnvHelp(fs)
	return cmd
}

// describe is the body of the import commit message.
func describe(ns, cluster string) string {
	return strings.Join([]string{
		fmt.Sprintf("Imported from namespace %s of the cluster rendered as %s: the", ns, cluster),
		"state records each ArtifactVersion's name, which later renders keep.",
	}, "\n") + "\n"
}

func filesOf(r *pipeline.ImportResult) []string {
	if r == nil {
		return nil
	}
	return r.Files
}

func commitOf(r *pipeline.ImportResult) string {
	if r == nil {
		return ""
	}
	return r.Commit
}
