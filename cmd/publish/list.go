package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/rollout"
	"github.com/spf13/cobra"
)

func newListCmd(inv *invocation) *cobra.Command {
	var (
		cat    = catalogFlags{readOnly: true}
		tls    tlsFlags
		r      renderFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "What the catalog lists where: every artifact and version, listed or delisted, per cluster",
		Long: `list reads the catalog repo alone (its branch tip's publish/state/ files: no
package repo, no registry, no cluster) and prints every artifact and version
any cluster records, and on each cluster whether it is listed, delisted
(present: false) or was never published there ("-"). With a publish.yaml
whose clusters have gates (clusters.<name>.after), a version listed upstream
and not yet on the cluster is "waiting until <time>", "waiting for
<cluster>" (not listed there yet) or "due" (the next run lists it).

This is not violet's list, which exports what the clusters have installed,
from the platform; publish status asks a cluster what it runs.

--output table (default), json (docs/commands.md) or markdown (for a job
summary).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cat.require(); err != nil {
				return err
			}
			switch output {
			case "table", "json", "markdown":
			default:
				return usagef("--output %q: write table, json or markdown", output)
			}
			o, err := cat.options(&tls)
			if err != nil {
				return err
			}
			var clusters []string
			if r.cluster != "" {
				clusters = []string{r.cluster}
			}
			// The gates of publish.yaml, when there is one, show what
			// waits where.
			gates := map[string][]rollout.Gate{}
			for _, n := range inv.config.ClusterNames() {
				if g := gatesOf(inv.config.ClusterSettings(n).After); len(g) > 0 {
					gates[n] = g
				}
			}
			l, err := pipeline.ListGated(cmd.Context(), o, clusters, gates, time.Now())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			switch output {
			case "json":
				data, err := json.MarshalIndent(l, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(w, string(data))
			case "markdown":
				fmt.Fprint(w, l.Markdown())
			default:
				fmt.Fprint(w, l.Table())
			}
			return nil
		},
	}
	fs := cmd.Flags()
	cat.register(fs, "read", "catalog Git repo: URL or local path")
	tls.register(fs)
	r.registerCluster(fs, "", "list this cluster only (default: every cluster the catalog has a state of)")
	fs.StringVar(&output, "output", "table", "table, json or markdown")
	withEnvHelp(fs)
	return cmd
}
