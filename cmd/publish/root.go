package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/operator-publish/publish/internal/scratch"
)

// newRootCmd returns the publish command for a plain invocation (no CI
// system): tests build a fresh one per run.
func newRootCmd() *cobra.Command { return newRoot(newInvocation(nil)) }

// newRoot returns the publish command with every subcommand, all wired to
// inv. Before a subcommand runs, the root makes the logger of --log-format,
// --quiet and --verbose, and fills the command's flags from the
// environment, the action inputs and publish.yaml (applyEnv).
func newRoot(inv *invocation) *cobra.Command {
	root := &cobra.Command{
		Use:           "publish",
		Short:         "Publish Kubernetes Operators from a package repo to a registry and a GitOps catalog repo",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			// The log flags as given on the command line first, so that
			// applyEnv's errors already go through them.
			log, err := inv.logFlags.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			inv.log = log
			notices, err := inv.applyEnv(cmd.Flags())
			if err != nil {
				return err
			}
			if inv.log, err = inv.logFlags.logger(cmd.ErrOrStderr()); err != nil { // PUBLISH_LOG_FORMAT, say
				return err
			}
			for _, n := range notices {
				inv.log.Log(cmd.Context(), n.level, n.msg)
			}
			sweepScratch(inv, time.Now())
			return nil
		},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	inv.logFlags.register(root.PersistentFlags())
	withEnvHelp(root.PersistentFlags())
	root.AddCommand(newRunCmd(inv), newMergeShardsCmd(inv), newPlanCmd(inv), newLintCmd(inv), newRenderCmd(inv), newVersionCmd(), newMirrorCmd(inv),
		newPackageCmd(inv), newPushCmd(inv), newVerifyCmd(inv), newCreateCmd(inv), newAdoptCmd(inv), newStatusCmd(inv), newImportCmd(inv),
		newCheckCmd(inv), newPruneCmd(inv), newListCmd(inv))
	return root
}

// sweepScratch removes from $TMPDIR what a killed publish left there
// (scratch.Sweep: temporary clones, bundles, catalogs), saying so; a
// temporary directory that cannot be read is no reason to stop.
func sweepScratch(inv *invocation, now time.Time) {
	dir := os.TempDir()
	removed, err := scratch.Sweep(dir, now)
	if len(removed) > 0 {
		inv.log.Info(fmt.Sprintf("removed %d temporary directories and files that a killed publish left in %s", len(removed), dir))
	}
	if err != nil {
		inv.log.Debug(fmt.Sprintf("cleaning %s: %v", dir, err))
	}
}
