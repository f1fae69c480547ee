package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/operator-publish/publish/internal/importer"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/registry"
)

func newImportCmd(inv *invocation) *cobra.Command {
	var (
		source    sourceFlags
		rf        renderFlags
		dst       dstRegistryFlags
		tls       tlsFlags
		retry     retryFlags
		cf        catalogFlags
		commit    commitFlags
		kube      kubeFlags
		manifests string
		dryRun    bool
		output    string
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
			if !rs.Caps.ArtifactObjects {
				return usagef("--target %s: import reads Alauda Artifacts and ArtifactVersions, which the %s target does not render", rs.Target, rs.Target)
			}
			if manifests != "" {
				if fi, err := os.Stat(manifests); err != nil || !fi.IsDir() {
					return usagef("--manifests-dir %s: not a directory (want the packages directory of the package repo checkout)", manifests)
				}
			}
			var o pipeline.Options
			o.Cluster, o.Target, o.TargetSettings, o.Render = rs.Cluster, rs.Target, rs.TargetSettings, rs.Render
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
			client, err := kube.client("operator-publish import", cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			// The bundles are read at the destination registry, with the
			// destination credentials.
			m := o.Mirror
			m.Src = m.Dst
			// Registry errors name the flags import has.
			m.Flags = registry.Flags{Src: registry.CredentialFlags{Username: "--dst-username", Password: "--dst-password"}, CA: "--ca-file", Insecure: "--insecure", PlainHTTP: "--plain-http"}
			r, err := importer.Run(cmd.Context(), client, o, importer.RunOptions{Namespace: ns, ManifestsDir: manifests, DryRun: dryRun, Bundles: m})
			if perr := printImport(cmd.OutOrStdout(), output, manifests, dryRun, r, err); perr != nil {
				return perr
			}
			return err
		},
	}
	fs := cmd.Flags()
	kube.register(fs)
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

// printImport prints to w, as text or json (output), what importer.Run
// did (r, nil when it failed before planning) and stopped on (runErr):
// the plan, then, once the catalog step succeeded, the catalog files, the
// manifests a dry run would write into manifests (the --manifests-dir, ""
// when not given), the manifests written and the commit. It returns the
// error of encoding the JSON only.
func printImport(w io.Writer, output, manifests string, dryRun bool, r *importer.Result, runErr error) error {
	if r == nil {
		return nil
	}
	if r.Plan != nil {
		if output == "json" {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			if eerr := enc.Encode(struct {
				*importer.Plan
				DryRun bool     `json:"dryRun"`
				Files  []string `json:"files,omitempty"`
				Commit string   `json:"commit,omitempty"`
			}{r.Plan, dryRun, r.Files, r.Commit}); eerr != nil {
				return eerr
			}
		} else {
			r.Plan.Print(w, dryRun)
		}
	}
	if !r.Imported {
		return nil
	}
	if output == "text" {
		for _, f := range r.Files {
			verb := "write"
			if dryRun {
				verb = "would write"
			}
			fmt.Fprintf(w, "%s catalog %s\n", verb, f)
		}
	}
	if dryRun {
		if manifests != "" && output == "text" {
			for _, a := range r.Plan.Artifacts {
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
	if runErr != nil {
		return nil // the manifests were not written
	}
	if r.Skeletons != nil && output == "text" {
		for _, p := range r.Skeletons.Paths() {
			fmt.Fprintf(w, "created   %s\n", filepath.Join(manifests, filepath.FromSlash(p)))
		}
		for _, p := range r.Skeletons.Kept {
			fmt.Fprintf(w, "kept      %s (exists)\n", filepath.Join(manifests, filepath.FromSlash(p)))
		}
	}
	if output == "text" {
		if r.Commit != "" {
			fmt.Fprintf(w, "commit    %s\n", r.Commit)
		} else {
			fmt.Fprintln(w, "no change: nothing committed")
		}
	}
	return nil
}
