package main

import (
	"fmt"

	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/spf13/cobra"
)

func newRenderCmd() *cobra.Command {
	var (
		c          commonFlags
		catalogDir string
	)
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Render the catalog into a local checkout, without registries and without committing",
		Long: `render runs the render stage alone: it writes publish/generated and
rendered/<cluster> of a local catalog checkout (--catalog-dir) from the
package repo and the checkout's publish/state.yaml. It reads no registry,
mirrors nothing and commits nothing; use it to preview an overlay change.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags()); err != nil {
				return err
			}
			if catalogDir == "" {
				return &usageError{fmt.Errorf("--catalog-dir DIR is required (a local checkout of the catalog repo)")}
			}
			if err := c.check(); err != nil {
				return err
			}
			ch, err := pipeline.Render(cmd.Context(), pipeline.RenderOptions{
				Source: c.source, PackagesDir: c.packagesDir, CatalogDir: catalogDir, Cluster: c.cluster,
				Render: c.renderConfig(), DstRegistry: c.dstRegistry, PlainHTTP: c.plainHTTP,
				Target: c.target, OLM: c.olmOptions(),
			})
			if err != nil {
				return err
			}
			printResult(cmd, &pipeline.Result{Changes: ch})
			fmt.Fprintf(cmd.OutOrStdout(), "rendered  %s/rendered/%s\n", catalogDir, c.cluster)
			return nil
		},
	}
	c.register(cmd.Flags())
	cmd.Flags().StringVar(&catalogDir, "catalog-dir", "", "local checkout of the catalog repo, written in place")
	withEnvHelp(cmd.Flags())
	return cmd
}
