package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/spf13/cobra"
)

func newPushCmd() *cobra.Command {
	var (
		o     pipeline.PushOptions
		c     commonFlags
		r     remoteFlags
		plain bool
	)
	cmd := &cobra.Command{
		Use:   "push FILE.tgz --dst-repo HOST[:PORT][/PREFIX]",
		Short: "Load an offline archive into a registry and, with --catalog, publish the catalog (violet push)",
		Long: `push reads FILE.tgz once, checking every blob digest as it reads, and pushes
every image to --dst-repo with the repository mapping of publish run
(<dst-repo>/<source repository path>, same tag or digest): blobs the registry
lacks are uploaded once and mounted into the other repositories that need
them; manifests go last, related images before bundles, and only when the
whole archive checked out. What the registry has already is skipped, so
running push again after an interruption resumes it.

With --catalog URL|PATH it then renders the PackageManifests inside the
archive and commits the catalog exactly as publish run would: the air-gapped
site runs the GitOps step from the archive alone. --skip-push renders and
commits only (the images must be there); --skip-crs pushes images only.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applyEnv(cmd.Flags()); err != nil {
				return err
			}
			if o.Mirror.DstRegistry == "" {
				return &usageError{fmt.Errorf("--dst-repo HOST[:PORT][/PREFIX] is required")}
			}
			if o.SkipPush && o.SkipCRs {
				return &usageError{fmt.Errorf("--skip-push and --skip-crs together leave nothing to do")}
			}
			if o.NoAuth && (o.Mirror.Dst.Username != "" || o.Mirror.Dst.Password != "") {
				return &usageError{fmt.Errorf("--no-auth and --username/--password exclude each other")}
			}
			if o.Mirror.Dst.Username == "" && o.Mirror.Dst.Password == "" && !o.NoAuth {
				// The destination credentials of publish run work too.
				o.Mirror.Dst.Username, o.Mirror.Dst.Password = os.Getenv("PUBLISH_DST_USERNAME"), os.Getenv("PUBLISH_DST_PASSWORD")
			}
			if ciEnv != nil && o.Mirror.Dst.Password != "" && !masked[o.Mirror.Dst.Password] {
				masked[o.Mirror.Dst.Password] = true
				ciEnv.Mask(o.Mirror.Dst.Password)
			}
			o.Archive = args[0]
			o.Mirror.PlainHTTP = plain
			if r.catalogURL != "" && !o.SkipCRs {
				if err := c.check(); err != nil {
					return err
				}
				o.Options.Cluster, o.Options.Render = c.cluster, c.renderConfig()
				o.Options.Catalog = gitops.Options{URL: r.catalogURL, Branch: r.catalogBranch, Username: r.catalogUser, Password: r.catalogPass}
				if o.Mirror.CAFile != "" && strings.HasPrefix(r.catalogURL, "https://") {
					pem, err := os.ReadFile(o.Mirror.CAFile)
					if err != nil {
						return &usageError{fmt.Errorf("--ca-file: %w", err)}
					}
					o.Options.Catalog.CABundle = pem
				}
				// Commit identity, signing, SSH and --catalog-path as publish run.
				if err := r.git.apply(&o.Options); err != nil {
					return err
				}
			} else if o.SkipPush {
				return &usageError{fmt.Errorf("--skip-push needs --catalog: it renders and commits the catalog only")}
			}
			o.Options.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			o.Progress = newProgress(cmd.ErrOrStderr(), "push")
			res, err := pipeline.Push(cmd.Context(), o)
			if res != nil && res.Push != nil {
				printPush(cmd, res.Push)
			}
			if err != nil {
				return err
			}
			if res.Catalog != nil {
				printResult(cmd, res.Catalog)
				reportRun(cmd, res.Catalog.Changes, res.Catalog.Commit)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Mirror.DstRegistry, "dst-repo", "", "destination registry HOST[:PORT][/PREFIX] (as --dst-registry of publish run)")
	fs.StringVar(&o.Mirror.Dst.Username, "username", "", "destination registry user name (default: $PUBLISH_DST_USERNAME, else the docker config)")
	fs.StringVar(&o.Mirror.Dst.Password, "password", "", "destination registry password or token (default: $PUBLISH_DST_PASSWORD)")
	fs.BoolVar(&o.NoAuth, "no-auth", false, "send no credentials (not even the docker config's)")
	fs.StringVar(&o.Mirror.CAFile, "ca-file", "", "PEM file of extra CA certificates to trust (registry and an HTTPS catalog)")
	fs.BoolVar(&plain, "plain-http", false, "use plain HTTP for the registry")
	fs.BoolVar(&plain, "plain", false, "alias of --plain-http (violet)")
	fs.IntVar(&o.Jobs, "jobs", 4, "blobs uploaded at once")
	fs.BoolVar(&o.SkipPush, "skip-push", false, "push no image: render and commit the catalog only (violet --skip-push)")
	fs.BoolVar(&o.SkipCRs, "skip-crs", false, "push images only, no catalog (violet --skip-crs)")
	fs.StringVar(&r.catalogURL, "catalog", "", "catalog Git repo (URL or local path): render and commit it after the push")
	fs.StringVar(&r.catalogBranch, "catalog-branch", "main", "catalog branch")
	fs.StringVar(&r.catalogUser, "catalog-username", "", "user name for an HTTPS catalog repo")
	fs.StringVar(&r.catalogPass, "catalog-password", "", "password or token for an HTTPS catalog repo (push access)")
	r.git.register(fs)
	fs.StringVar(&c.cluster, "cluster", "global", "cluster overlay: kustomize/clusters/<cluster> in the catalog repo")
	fs.StringVar(&c.namespace, "namespace", "cpaas-system", "namespace of the Artifact and ArtifactVersion objects")
	fs.StringVar(&c.library, "library", "platform", "value of the cpaas.io/library label")
	fs.StringSliceVar(&c.pullSecrets, "image-pull-secret", nil, "Artifact spec.imagePullSecrets entry (repeatable)")
	c.packagesDir = "packages"
	withEnvHelp(fs)
	return cmd
}

// printPush says what was pushed (stdout).
func printPush(cmd *cobra.Command, p *archive.PushResult) {
	w := cmd.OutOrStdout()
	pushed := 0
	for _, im := range p.Images {
		state := "pushed"
		if im.Skipped {
			state = "present"
		} else {
			pushed++
		}
		fmt.Fprintf(w, "%-9s %s@%s\n", state, im.Destination, im.Digest)
	}
	fmt.Fprintf(w, "images    %d pushed, %d already there; blobs %d pushed (%s), %d mounted, %d already there\n",
		pushed, len(p.Images)-pushed, p.BlobsPushed, archive.Size(p.BytesPushed), p.BlobsMounted, p.BlobsSkipped)
}
