package main

import (
	"fmt"
	"time"

	"github.com/operator-publish/publish/internal/adopt"
	"github.com/operator-publish/publish/internal/status"
	"github.com/spf13/cobra"
)

func newAdoptCmd(_ *invocation) *cobra.Command {
	var (
		o               adopt.Options
		kube            kubeFlags
		refreshAfter    time.Duration
		catalogOperator string
	)
	cmd := &cobra.Command{
		Use:   "adopt",
		Short: "Set the ownerReference of every ArtifactVersion to its Artifact (run in the cluster after a sync)",
		Long: `adopt gives every ArtifactVersion of the namespace an ownerReference to the
Artifact its cpaas.io/artifact-version label names, with that Artifact's uid,
which the platform expects and a rendered catalog cannot know. It writes only
ArtifactVersions that lack the reference (or carry a stale one): running it
again changes nothing. catalog-repo-template/ ships it as a CronJob (every 2
minutes, for Argo CD and for Flux) with the RBAC it needs: on a schedule, not
after the sync, so that health checks that wait for the platform never hold
it back (docs/after-sync.md).

The cluster: --kubeconfig (or $KUBECONFIG, ~/.kube/config), else the
in-cluster service account.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			co, err := refreshOperator(catalogOperator, refreshAfter)
			if err != nil {
				return err
			}
			client, err := kube.client("operator-publish adopt", cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			res, err := adopt.Run(cmd.Context(), client, o)
			if res != nil {
				res.Print(cmd.OutOrStdout(), o.Namespace, o.DryRun)
			}
			if err != nil || refreshAfter <= 0 || o.DryRun {
				return err
			}
			rs, err := status.RefreshWith(cmd.Context(), client, status.RefreshOptions{Namespace: o.Namespace, Grace: refreshAfter, Now: time.Now(), CatalogOperator: co})
			status.PrintRestarted(cmd.OutOrStdout(), rs)
			if err == nil && len(rs) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "refresh: every version Present for %s is in its PackageManifest (or none is served): nothing restarted\n", refreshAfter)
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Namespace, "namespace", "cpaas-system", "namespace of the Artifacts and ArtifactVersions")
	kube.register(fs)
	fs.DurationVar(&refreshAfter, "refresh-after", 0, "opt-in: after adopting, restart the catalog pods of a PackageManifest that still lacks a version Present for this long (e.g. 10m); needs list and delete on pods (docs/after-sync.md#refresh)")
	fs.StringVar(&catalogOperator, "refresh-catalog-operator", "", "opt-in, with --refresh-after: also restart this catalog-operator Deployment, NAMESPACE/NAME (the platform's: "+status.DefaultCatalogOperator.String()+"), when a version Present for that long is an upgrade its PackageManifest does not show yet; needs patch on that Deployment (docs/after-sync.md#refresh)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "validate the updates on the API server (dryRun=All) without storing them")
	withEnvHelp(fs)
	return cmd
}

// refreshOperator parses --refresh-catalog-operator, which needs
// --refresh-after.
func refreshOperator(flag string, refreshAfter time.Duration) (status.ObjectRef, error) {
	if flag == "" {
		return status.ObjectRef{}, nil
	}
	if refreshAfter <= 0 {
		return status.ObjectRef{}, usagef("--refresh-catalog-operator needs --refresh-after (the grace period, e.g. 10m)")
	}
	co, err := status.ParseObjectRef(flag)
	if err != nil {
		return co, usagef("--refresh-catalog-operator %w", err)
	}
	return co, nil
}
