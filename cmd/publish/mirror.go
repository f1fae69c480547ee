package main

import (
	"fmt"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/shard"
	"github.com/spf13/cobra"
)

func newMirrorCmd(inv *invocation) *cobra.Command {
	var (
		source  sourceFlags
		src     srcRegistryFlags
		dst     dstRegistryFlags
		tls     tlsFlags
		retry   retryFlags
		cp      copyFlags
		base    string
		noFetch bool
		images  []string
		rep     string
		shards  shardFlags
		o       mirror.Options
	)
	cmd := &cobra.Command{
		Use:   "mirror [PATH...]",
		Short: "Mirror the related images and bundles of packages (only the mirror stage of run)",
		Long: `mirror copies the related images and then the bundle images of the package
versions given as PATHs (manifest files or directories below --source:
relative to it, or absolute), or of the versions changed since --base, or of
every version, to --dst-registry, exactly as run does, and nothing else: no
catalog, no render, no commit. --image adds images by reference (with or
without packages).

Digests are preserved; images already at the destination cost one request;
transient registry errors are retried; the report names each image that
failed and why; --report FILE also writes that report as JSON (docs/report.md),
whatever the outcome. Exit 0 when every image is at the destination, 1 for invalid
package manifests or a bundle that is missing or invalid (as run), 2 when an
image could not be mirrored.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := dst.require(); err != nil {
				return err
			}
			if err := checkReportFlag(rep); err != nil {
				return err
			}
			if err := checkOutputFlag("--shard-result", shards.result); err != nil {
				return err
			}
			part, err := shards.get()
			if err != nil {
				return err
			}
			reg := registryFlags{src: &src, dst: &dst, tls: &tls, retry: &retry, copy: &cp}
			if err := reg.apply(&o); err != nil {
				return err
			}
			if len(args) > 0 || base != "" || len(images) == 0 {
				if err := source.check(false, ""); err != nil {
					return err
				}
			}
			o.Logger = inv.log // retries, requests that wait
			res, err := pipeline.Mirror(cmd.Context(), pipeline.MirrorOptions{
				Source: source.source, PackagesDir: source.packagesDir, Paths: args, Base: base, NoFetch: noFetch,
				Images: images, Mirror: o, Log: inv.log, Shard: part,
			})
			if res != nil {
				printMirrorReport(cmd, inv, res.Report, err)
			}
			var mr *mirror.Report
			if res != nil {
				mr = res.Report
			}
			err = writeReport(rep, "mirror", mr, nil, err)
			if shards.result != "" {
				var plan *shard.Plan
				var items []shard.Item
				if res != nil {
					plan, items = res.Plan, res.Part
				}
				err = writeShardResult(shards.result, "mirror", part, mr, plan, items, nil, err)
			}
			return err
		},
	}
	fs := cmd.Flags()
	source.register(fs)
	dst.register(fs, "push access")
	src.register(fs)
	src.registerMirrors(fs)
	tls.register(fs)
	retry.register(fs)
	cp.register(fs)
	fs.StringVar(&base, "base", "", "mirror the versions changed since this source revision (default: the PATHs given, else every version)")
	fs.BoolVar(&noFetch, "no-fetch", false, "never fetch from the package repo's origin to deepen a shallow clone")
	fs.StringVar(&rep, "report", "", "also write what was copied, already present and failed, and why, as JSON to this file (docs/report.md)")
	fs.StringArrayVar(&images, "image", nil, "also mirror this image reference (repeatable); with --image only, no package repo is read")
	shards.register(fs)
	withEnvHelp(fs)
	return cmd
}

// printMirrorReport prints one line per image to stdout and a summary to
// stderr: copied or already present, with digest, signatures and retries;
// then each failed image and why.
func printMirrorReport(cmd *cobra.Command, inv *invocation, rep *mirror.Report, err error) {
	w := cmd.OutOrStdout()
	retries, sigs := 0, 0
	if rep != nil {
		for _, r := range rep.Images {
			state := "copied"
			if r.Skipped {
				state = "present"
			}
			extra := ""
			if r.Signatures > 0 {
				extra += fmt.Sprintf(" +%d signatures", r.Signatures)
			}
			if r.Retries > 0 {
				extra += fmt.Sprintf(" (%d retries)", r.Retries)
			}
			fmt.Fprintf(w, "%-8s %s -> %s %s%s\n", state, r.Source, r.Destination, r.Digest, extra)
			retries += r.Retries
			sigs += r.Signatures
		}
	}
	failed := pipeline.ImageErrors(err)
	for _, ie := range failed {
		fmt.Fprintf(w, "%-8s %s: %v\n", "failed", ie.Ref, ie.Err)
	}
	n, copied := 0, 0
	if rep != nil {
		n, copied = len(rep.Images), rep.Copied()
	}
	inv.logf("mirror: %d images at the destination (%d copied, %d already there), %d signature manifests, %d retries, %d failed", n, copied, n-copied, sigs, retries, len(failed))
}
