package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/operator-publish/publish/internal/logging"
	"github.com/operator-publish/publish/internal/prune"
	"github.com/operator-publish/publish/internal/scratch"
)

func newPruneCmd(inv *invocation) *cobra.Command {
	var (
		catalogDir, planFile string
		olderThan            time.Duration
		lookup               bool
		dst                  dstRegistryFlags
		tls                  tlsFlags
		retry                retryFlags
	)
	cmd := &cobra.Command{
		Use:   "prune --plan FILE",
		Short: "List what delisting left at the destination registries, for review (never deletes)",
		Long: `prune --plan reads the state of every cluster in a catalog checkout with its
history and lists, per destination repository, every manifest (bundle and
related image, by digest) that only delisted versions reference: one that a
listed version of any cluster, or another artifact, still references is
never listed. Since when each is delisted comes from the catalog history;
what was delisted less than --older-than ago is kept for now, so that a
quick relist needs no mirror again.

The plan is written as JSON to --plan FILE and as Markdown to standard output
(and the CI job summary): review it, for example in a pull request. Nothing
is deleted: violet's gc deletes without a dry run, prune never does while
planning. With --lookup, each manifest's size and whether it is still there
come from one HEAD at the destination (read access, --dst-username).
See docs/prune.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if planFile == "" {
				return usagef("--plan FILE: where to write the reviewed list (JSON)")
			}
			if st, err := os.Stat(filepath.Dir(planFile)); err != nil || !st.IsDir() {
				return usagef("--plan %s: its directory %s does not exist", planFile, filepath.Dir(planFile))
			}
			if olderThan < 0 {
				return usagef("--older-than %s: want a positive duration such as 720h (30 days)", olderThan)
			}
			o := prune.Options{CatalogDir: catalogDir, OlderThan: olderThan, Now: time.Now()}
			if lookup {
				mc, err := checkClient(registryFlags{dst: &dst, tls: &tls, retry: &retry})
				if err != nil {
					return err
				}
				o.Parse, o.Remote = mc.ParseReference, mc.DstOptions()
			}
			p, err := prune.MakePlan(cmd.Context(), o)
			if err != nil {
				return &usageError{err}
			}
			data, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				return err
			}
			f, err := scratch.Partial(planFile)
			if err != nil {
				return fmt.Errorf("--plan: %w", err)
			}
			_, err = f.Write(append(data, '\n'))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Rename(f.Name(), planFile)
			}
			if err != nil {
				os.Remove(f.Name())
				return fmt.Errorf("--plan %s: %w", planFile, err)
			}
			md := p.Markdown()
			fmt.Fprint(cmd.OutOrStdout(), logging.Clean(md))
			if inv.inCI() {
				if err := inv.ci.Summary(md); err != nil {
					inv.warnf("CI summary: %v", err)
				}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&catalogDir, "catalog-dir", ".", "a checkout of the catalog repo with its history (a full clone); read only")
	fs.StringVar(&planFile, "plan", "", "write the plan (JSON) to this file")
	fs.DurationVar(&olderThan, "older-than", prune.DefaultOlderThan, "list only what every cluster delisted at least this long ago")
	fs.BoolVar(&lookup, "lookup", false, "ask the destination for each manifest's size and whether it is still there (one HEAD each; read access)")
	dst.register(fs, "read access, with --lookup")
	tls.register(fs)
	retry.register(fs)
	withEnvHelp(fs)
	return cmd
}
