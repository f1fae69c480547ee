package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/diff"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
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
		o       mirror.Options
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
package manifests, 2 when an image could not be mirrored.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := dst.require(); err != nil {
				return err
			}
			reg := registryFlags{src: &src, dst: &dst, tls: &tls, retry: &retry, copy: &cp}
			if err := reg.apply(&o); err != nil {
				return err
			}
			sourceDir, packagesDir, dstRegistry := source.source, source.packagesDir, dst.registry
			var ms []*manifest.PackageManifest
			if len(args) > 0 || base != "" || len(images) == 0 {
				if err := source.check(false, ""); err != nil {
					return err
				}
				all, err := pipeline.Scan(sourceDir, packagesDir)
				if err != nil {
					return err
				}
				if ms, err = selectManifests(cmd, inv, all, args, sourceDir, packagesDir, base, noFetch); err != nil {
					return err
				}
				if o.SrcHosts == nil {
					o.SrcHosts = manifestHosts(all)
				}
			}
			if len(images) > 0 && o.SrcHosts != nil {
				// Images named on the command line are sources too.
				o.SrcHosts = append(o.SrcHosts, manifestHosts(nil, images...)...)
			}
			o.Logger = registry.LineLogger(cmd.ErrOrStderr()) // retries, requests that wait
			mc, err := mirror.New(o)
			if err != nil {
				return &usageError{err}
			}
			related, bundles, err := mirrorTargets(cmd, mc, ms)
			if err != nil {
				return err
			}
			for _, img := range images {
				related = append(related, mirror.Target{Ref: img})
			}
			inv.logf("mirror: %d package versions, %d related images, %d bundles to %s", len(ms), countUnique(related), countUnique(bundles), dstRegistry)
			rep, err := mc.MirrorTargets(cmd.Context(), related, bundles)
			printMirrorReport(cmd, inv, rep, err)
			if err != nil {
				return fmt.Errorf("mirror failed:\n%w", err)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	source.register(fs)
	dst.register(fs, "push access")
	src.register(fs)
	tls.register(fs)
	retry.register(fs)
	cp.register(fs)
	fs.StringVar(&base, "base", "", "mirror the versions changed since this source revision (default: the PATHs given, else every version)")
	fs.BoolVar(&noFetch, "no-fetch", false, "never fetch from the package repo's origin to deepen a shallow clone")
	fs.StringArrayVar(&images, "image", nil, "also mirror this image reference (repeatable); with --image only, no package repo is read")
	withEnvHelp(fs)
	return cmd
}

// selectManifests keeps the manifests below one of paths (relative to
// source) and, with base, those changed since base.
func selectManifests(cmd *cobra.Command, inv *invocation, all []*manifest.PackageManifest, paths []string, source, packagesDir, base string, noFetch bool) ([]*manifest.PackageManifest, error) {
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(source, p)); err != nil {
			return nil, &usageError{fmt.Errorf("%s: no such file or directory below --source %s", p, source)}
		}
	}
	var changed func(a, v string) bool
	if base != "" {
		dr, err := diff.Compute(cmd.Context(), diff.Options{Repo: source, PackagesDir: packagesDir, Base: base, Fetch: !noFetch, Log: inv.logWriter()})
		if err != nil {
			return nil, fmt.Errorf("--base %s: %w", base, err)
		}
		changed = dr.Changed
	}
	var out []*manifest.PackageManifest
	for _, m := range all {
		if !pipeline.Selected(m.Path, paths) || (changed != nil && !changed(m.Artifact, m.Version.String())) {
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// manifestHosts returns the registries named by the manifests and refs.
func manifestHosts(ms []*manifest.PackageManifest, refs ...string) []string {
	var hosts []string
	seen := map[string]bool{}
	for _, m := range ms {
		refs = append(append(refs, m.Spec.Artifact), m.Spec.RelatedImages...)
	}
	for _, r := range refs {
		if ref, err := name.ParseReference(r); err == nil && !seen[ref.Context().RegistryStr()] {
			seen[ref.Context().RegistryStr()] = true
			hosts = append(hosts, ref.Context().RegistryStr())
		}
	}
	if hosts == nil {
		hosts = []string{}
	}
	return hosts
}

// mirrorTargets reads the bundle of every manifest (concurrently) and
// returns its related images (spec.relatedImages and the images the CSV
// deploys) and the bundle with its destination tag. A bundle that cannot
// be read fails the command, naming the manifest.
func mirrorTargets(cmd *cobra.Command, mc *mirror.Client, ms []*manifest.PackageManifest) (related, bundles []mirror.Target, err error) {
	bs := make([]*bundle.Bundle, len(ms))
	var mu sync.Mutex
	var errs []error
	g, ctx := errgroup.WithContext(cmd.Context())
	g.SetLimit(8)
	for i, m := range ms {
		g.Go(func() error {
			b, err := bundle.Fetch(ctx, m.Spec.Artifact, mc.SrcOptions()...)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s:%d: bundle %s: %w", m.Path, m.Lines["spec.artifact"], m.Spec.Artifact, err))
				mu.Unlock()
				return nil
			}
			bs[i] = b
			return nil
		})
	}
	_ = g.Wait()
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("nothing mirrored:\n%w", errors.Join(errs...))
	}
	for i, m := range ms {
		for _, r := range append(append([]string(nil), m.Spec.RelatedImages...), bs[i].Images...) {
			related = append(related, mirror.Target{Ref: r})
		}
		bundles = append(bundles, mirror.Target{Ref: m.Spec.Artifact, Tag: m.Tag()})
	}
	return related, bundles, nil
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
	var failed []*mirror.ImageError
	if err != nil {
		var walk func(error)
		walk = func(e error) {
			var ie *mirror.ImageError
			if j, ok := e.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					walk(e)
				}
			} else if errors.As(e, &ie) {
				failed = append(failed, ie)
			}
		}
		walk(err)
	}
	for _, ie := range failed {
		fmt.Fprintf(w, "%-8s %s: %v\n", "failed", ie.Ref, ie.Err)
	}
	n, copied := 0, 0
	if rep != nil {
		n, copied = len(rep.Images), rep.Copied()
	}
	inv.logf("mirror: %d images at the destination (%d copied, %d already there), %d signature manifests, %d retries, %d failed", n, copied, n-copied, sigs, retries, len(failed))
}

// countUnique counts the distinct targets of ts.
func countUnique(ts []mirror.Target) int {
	seen := map[mirror.Target]bool{}
	for _, t := range ts {
		seen[t] = true
	}
	return len(seen)
}
