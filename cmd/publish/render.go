package main

import (
	"fmt"

	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/spf13/cobra"
)

func newRenderCmd(inv *invocation) *cobra.Command {
	var (
		source     sourceFlags
		r          renderFlags
		dst        dstRegistryFlags
		tls        tlsFlags
		catalogDir string
	)
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Render the catalog into a local checkout, without registries and without committing",
		Long: `render runs the render stage alone: it writes publish/generated/<cluster> and
rendered/<cluster> of a local catalog checkout (--catalog-dir) for each
cluster served (--cluster, --clusters, else those of publish.yaml) from the
package repo and the checkout's publish/state/<cluster>.yaml. It reads no registry,
mirrors nothing and commits nothing; use it to preview an overlay change.
--dst-registry and --plain-http only say how image references are written.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if catalogDir == "" {
				return usagef("--catalog-dir DIR is required (a local checkout of the catalog repo)")
			}
			if err := source.check(false, ""); err != nil {
				return err
			}
			all, err := r.resolveClusters(inv.config)
			if err != nil {
				return err
			}
			for _, rs := range all {
				reg := dst.registry
				if rs.DstRegistry != "" {
					reg = rs.DstRegistry
				}
				ch, err := pipeline.Render(cmd.Context(), pipeline.RenderOptions{
					Source: source.source, PackagesDir: source.packagesDir, CatalogDir: catalogDir, Cluster: rs.Cluster,
					Render: rs.Render, DstRegistry: reg, PlainHTTP: tls.plainHTTP,
					Target: rs.Target, TargetSettings: rs.TargetSettings, Include: rs.Include, Exclude: rs.Exclude,
				})
				if err != nil {
					if len(all) > 1 {
						return fmt.Errorf("cluster %s: %w", rs.Cluster, err)
					}
					return err
				}
				printResult(cmd, &pipeline.Result{Changes: ch})
				fmt.Fprintf(cmd.OutOrStdout(), "rendered  %s/rendered/%s\n", catalogDir, rs.Cluster)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	source.register(fs)
	r.register(fs)
	r.registerClusters(fs)
	dst.registerName(fs)
	tls.registerPlain(fs)
	fs.StringVar(&catalogDir, "catalog-dir", "", "local checkout of the catalog repo, written in place")
	withEnvHelp(fs)
	return cmd
}
