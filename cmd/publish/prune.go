package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/logging"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/olm"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/prune"
	"github.com/operator-publish/publish/internal/scratch"
)

func newPruneCmd(inv *invocation) *cobra.Command {
	var (
		catalogDir, planFile string
		applyFile            string
		olderThan            time.Duration
		lookup, pullRequest  bool
		prBranch             string
		cf                   catalogFlags
		forgeFlags           deliveryFlags
		dst                  dstRegistryFlags
		tls                  tlsFlags
		retry                retryFlags
	)
	cmd := &cobra.Command{
		Use:   "prune --plan FILE | --apply FILE",
		Short: "List what delisting left at the destination registries for review (--plan), then delete exactly that (--apply)",
		Long: `prune --plan reads the state of every cluster in a catalog checkout with its
history and lists, per destination repository, every manifest (bundle and
related image, by digest) that only delisted versions reference: one that a
listed version of any cluster, or another artifact, still references is
never listed. Since when each is delisted comes from the catalog history;
what was delisted less than --older-than ago is kept for now, so that a
quick relist needs no mirror again.

The plan is written as JSON to --plan FILE and as Markdown to standard output
(and the CI job summary): review it, for example in a pull request. Nothing
is deleted while planning. With --lookup, each manifest's size and whether it is still there
come from one HEAD at the destination (read access, --dst-username), and
the children of an image index that no listed index holds are listed with it.

prune --apply FILE deletes exactly the manifests of a reviewed plan, through
the registry API, after reading what is listed now: from the catalog branch's
tip with --catalog, else from --catalog-dir, which must not be behind its
origin (pull it first: a stale checkout is refused). What a listed version
references now (relisted since the plan) is left, and said. Tags that
still point at a manifest go first where the registry can delete a tag, then
the manifest by digest, then its children. Blobs are left to the registry's
garbage collection, whose command it prints. A registry that refuses deletes
stops it before anything is half-done (exit 2). It needs delete rights at the
destination. prune never runs inside publish run. See docs/prune.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (planFile == "") == (applyFile == "") {
				return usagef("give --plan FILE (write the list to review) or --apply FILE (delete what a reviewed plan lists), one of them")
			}
			if applyFile != "" {
				return pruneApply(cmd, inv, catalogDir, applyFile, &cf, registryFlags{dst: &dst, tls: &tls, retry: &retry})
			}
			if st, err := os.Stat(filepath.Dir(planFile)); err != nil || !st.IsDir() {
				return usagef("--plan %s: its directory %s does not exist", planFile, filepath.Dir(planFile))
			}
			if olderThan < 0 {
				return usagef("--older-than %s: want a positive duration such as 720h (30 days)", olderThan)
			}
			o := prune.Options{CatalogDir: catalogDir, OlderThan: olderThan, Now: time.Now()}
			mc, err := checkClient(registryFlags{dst: &dst, tls: &tls, retry: &retry})
			if err != nil {
				return err
			}
			o.OLMKept = olmKept(mc)
			if lookup {
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
			if err := scratch.WriteFile(planFile, append(data, '\n'), 0o644); err != nil {
				return fmt.Errorf("--plan %s: %w", planFile, err)
			}
			md := p.Markdown()
			fmt.Fprint(cmd.OutOrStdout(), logging.Clean(md))
			if pullRequest {
				if err := proposePrune(cmd, inv, &cf, &tls, &forgeFlags, prBranch, data, md, len(p.Entries)); err != nil {
					return err
				}
			}
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
	fs.StringVar(&applyFile, "apply", "", "delete exactly what this reviewed plan (JSON, from --plan) lists, unless it is listed again")
	fs.DurationVar(&olderThan, "older-than", prune.DefaultOlderThan, "list only what every cluster delisted at least this long ago")
	fs.BoolVar(&pullRequest, "pull-request", false, "also propose the plan as a pull request on the catalog repo (--catalog, the forge flags): its files publish/prune/plan.json and plan.md on --pr-branch, for review; merge it, then --apply publish/prune/plan.json from the merged checkout")
	fs.StringVar(&prBranch, "pr-branch", "publish/prune", "the rolling branch of --pull-request")
	cf.readOnly = true
	cf.register(fs, "push", "catalog Git repo: where --pull-request proposes the plan, and where --apply reads what is listed now (its branch's tip): URL or local path")
	forgeFlags.registerForge(fs)
	fs.BoolVar(&lookup, "lookup", false, "ask the destination for each manifest's size and whether it is still there (one HEAD each; read access)")
	dst.register(fs, "read access with --lookup, delete rights with --apply")
	tls.register(fs)
	retry.register(fs)
	withEnvHelp(fs)
	return cmd
}

// olmKept returns prune's Options.OLMKept with mc (the destination's
// credentials, read access): the bundle images an OLM cluster's catalog
// image keeps deprecated (olm.LoadPrevious, Previous.Kept).
func olmKept(mc *mirror.Client) func(context.Context, string) (map[string]bool, error) {
	return func(ctx context.Context, image string) (map[string]bool, error) {
		ref, err := mc.ParseReference(image)
		if err != nil {
			return nil, err
		}
		prev, err := olm.LoadPrevious(ctx, ref, mc.DstOptions()...)
		if err != nil {
			return nil, err
		}
		return prev.Kept(), nil
	}
}

// pruneApply is prune --apply: it reads the plan file, deletes what it
// lists (prune.Apply) and prints what it did and the garbage collection to
// run. Errors: usage errors naming --apply for a plan that cannot be read,
// the registry's.
func pruneApply(cmd *cobra.Command, inv *invocation, catalogDir, file string, cf *catalogFlags, reg registryFlags) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return usagef("--apply %s: %v", file, err)
	}
	var p prune.Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return usagef("--apply %s: not a prune plan: %v", file, err)
	}
	mc, err := checkClient(reg)
	if err != nil {
		return err
	}
	ao := prune.ApplyOptions{CatalogDir: catalogDir, Parse: mc.ParseReference, Remote: mc.DstOptions(), Logf: inv.logf, OLMKept: olmKept(mc)}
	if cf.url != "" {
		// What is listed now comes from the catalog branch's tip.
		cat, err := cf.options(reg.tls)
		if err != nil {
			return err
		}
		ao.States = func(ctx context.Context) (map[string][]byte, error) {
			tip, err := catalog.OpenTip(ctx, cat)
			if err != nil {
				return nil, err
			}
			defer tip.Close()
			return tip.Files(gitops.StateDir, nil)
		}
	}
	res, err := prune.Apply(cmd.Context(), &p, ao)
	if res != nil {
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "prune: %d manifests deleted, %d left (listed again since the plan), %d already gone\n", len(res.Deleted), len(res.Relisted), len(res.Gone))
		if len(res.Deleted) > 0 {
			fmt.Fprintln(out, "prune: their layers stay until the registry's garbage collection: distribution `registry garbage-collect /etc/docker/registry/config.yml` (Debian: `docker-registry garbage-collect CONFIG`), with the registry read-only or stopped, never with --delete-untagged (related images are mirrored by digest, without a tag); Harbor: Administration > Clean Up")
		}
	}
	var re *prune.RefusedError
	var se *prune.StaleError
	if errors.As(err, &re) || errors.As(err, &se) {
		return &usageError{err}
	}
	return err
}

// prunePlanDir is where --pull-request writes the plan in the catalog.
const prunePlanDir = "publish/prune"

// proposePrune is prune --plan --pull-request: the plan's JSON (data) and
// Markdown (md) as files of the catalog repo, proposed on branch
// (pipeline.ProposeFiles). Errors are usage errors naming the catalog and
// forge flags, and the forge's.
func proposePrune(cmd *cobra.Command, inv *invocation, cf *catalogFlags, tls *tlsFlags, ff *deliveryFlags, branch string, data []byte, md string, n int) error {
	if err := cf.require(); err != nil {
		return err
	}
	cat, err := cf.options(tls)
	if err != nil {
		return err
	}
	res, err := pipeline.ProposeFiles(cmd.Context(), pipeline.ProposeOptions{
		Catalog: cat, Forge: ff.forge(cat), Branch: branch,
		Files:   map[string][]byte{prunePlanDir + "/plan.json": append(data, '\n'), prunePlanDir + "/plan.md": []byte(md)},
		Message: fmt.Sprintf("publish prune: %d manifests to delete", n),
		Title:   fmt.Sprintf("publish prune: %d manifests to delete at the destination registries", n),
		Body:    md + "\nMerge this pull request, then run `publish prune --apply " + prunePlanDir + "/plan.json` from a checkout of the merged catalog branch.\n",
		Log:     inv.logWriter(),
	})
	if err != nil {
		return err
	}
	if res.Action != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "prune: pull request %s #%d (%s)\n", res.Action, res.Number, res.URL)
	}
	return nil
}
