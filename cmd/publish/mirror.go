package main

import (
	"fmt"
	"log/slog"

	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/spf13/cobra"
)

func newMirrorCmd() *cobra.Command {
	var (
		source, packagesDir, dstRegistry, configFile, caFile, base string
		plainHTTP, noFetch                                         bool
		images                                                     []string
		o                                                          mirror.Options
		m                                                          mirrorFlags
	)
	cmd := &cobra.Command{
		Use:   "mirror [PATH...]",
		Short: "Mirror the related images and bundles of packages (only the mirror stage of run)",
		Long: `mirror copies the related images and then the bundle images of the package
versions given as PATHs (manifest files or directories, relative to --source),
or of the versions changed since --base, or of every version, to
--dst-registry, exactly as run does, and nothing else: no catalog, no render,
no commit. --image adds images by reference (with or without packages).

Digests are preserved; images already at the destination cost one request;
transient registry errors are retried; the report names each image that
failed and why. Exit 0 when every image is at the destination, 1 for invalid
package manifests or a bundle that is missing or invalid (as run), 2 when an
image could not be mirrored.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applyEnv(cmd.Flags()); err != nil {
				return err
			}
			if dstRegistry == "" {
				return &usageError{fmt.Errorf("--dst-registry HOST[:PORT][/PREFIX] is required")}
			}
			if o.Concurrency < 1 {
				return &usageError{fmt.Errorf("--concurrency must be at least 1, not %d", o.Concurrency)}
			}
			if err := m.apply(&o); err != nil {
				return err
			}
			o.DstRegistry, o.PlainHTTP, o.CAFile = dstRegistry, plainHTTP, caFile
			res, err := pipeline.Mirror(cmd.Context(), pipeline.MirrorOptions{
				Source: source, PackagesDir: packagesDir, Paths: args, Base: base, NoFetch: noFetch,
				Images: images, Mirror: o, Log: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)),
			})
			if res != nil {
				printMirrorReport(cmd, res.Report, err)
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&source, "source", ".", "package repo checkout")
	fs.StringVar(&packagesDir, "packages-dir", "packages", "directory of PackageManifests, relative to --source")
	fs.StringVar(&dstRegistry, "dst-registry", "", "destination registry HOST[:PORT][/PREFIX]")
	fs.BoolVar(&plainHTTP, "plain-http", false, "use plain HTTP for the source and destination registries")
	fs.BoolVar(&plainHTTP, "plain", false, "alias of --plain-http (violet)")
	fs.StringVar(&configFile, "config", "", "publish.yaml to read (default: publish.yaml at the root of --source, when present)")
	fs.StringVar(&o.Src.Username, "src-username", "", "source registry user name (default: docker config)")
	fs.StringVar(&o.Src.Password, "src-password", "", "source registry password or token")
	fs.StringVar(&o.Dst.Username, "dst-username", "", "destination registry user name (default: docker config)")
	fs.StringVar(&o.Dst.Password, "dst-password", "", "destination registry password or token (push access)")
	fs.StringVar(&caFile, "ca-file", "", "PEM file of extra CA certificates to trust")
	fs.IntVar(&o.Concurrency, "concurrency", 4, "registry operations in flight at once, for all images and blobs together")
	fs.StringVar(&base, "base", "", "mirror the versions changed since this source revision (default: the PATHs given, else every version)")
	fs.BoolVar(&noFetch, "no-fetch", false, "never fetch from the package repo's origin to deepen a shallow clone")
	fs.StringArrayVar(&images, "image", nil, "also mirror this image reference (repeatable); with --image only, no package repo is read")
	m.register(fs)
	withEnvHelp(fs)
	return cmd
}

// printMirrorReport prints one line per image to stdout and a summary to
// stderr: copied or already present, with digest, signatures and retries;
// then each failed image and why.
func printMirrorReport(cmd *cobra.Command, rep *mirror.Report, err error) {
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
	fmt.Fprintf(cmd.ErrOrStderr(), "mirror: %d images at the destination (%d copied, %d already there), %d signature manifests, %d retries, %d failed\n", n, copied, n-copied, sigs, retries, len(failed))
}
