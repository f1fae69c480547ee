package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// newProgress returns the progress reporter for w: a bar on a terminal,
// a line every 10 s otherwise.
func newProgress(w io.Writer, label string) *archive.Progress {
	p := &archive.Progress{Out: w, Label: label, Interval: 10 * time.Second}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.Terminal, p.Interval = true, 200*time.Millisecond
	}
	return p
}

func newPackageCmd() *cobra.Command {
	var (
		o       pipeline.PackageOptions
		plain   bool
		changed bool
	)
	cmd := &cobra.Command{
		Use:   "package [DIR...] -o FILE.tgz",
		Short: "Write an offline archive of bundles and related images for an air-gapped site (violet package)",
		Long: `package reads every bundle and related image of the package repo's versions (or
of the versions below the DIRs given, relative to --source; with --changed only
the versions changed since --base) and writes FILE.tgz: one OCI image layout
(oci-layout, index.json, blobs/sha256/...) holding each blob once, manifests
byte for byte (digests preserved), each image annotated with its source
reference, and every PackageManifest of the repo under packages/. The archive
is deterministic (same input, same bytes) and FILE.tgz.sha256 is written
beside it. --platforms reduces image indexes to the manifests' spec.arch (or
the platforms given): reduced indexes get new digests. --cache DIR keeps an OCI
image layout of what was read, so that the next archive reads only what is new
from the registries.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applyEnv(cmd.Flags()); err != nil {
				return err
			}
			if o.Output == "" {
				return &usageError{fmt.Errorf("-o FILE.tgz is required")}
			}
			if o.Level < 0 || o.Level > 9 {
				return &usageError{fmt.Errorf("--level %d: want 0 (store) to 9 (smallest)", o.Level)}
			}
			if o.VerifyCache && o.Cache == "" {
				return &usageError{fmt.Errorf("--verify-cache needs --cache DIR")}
			}
			if changed && o.Base == "" {
				return &usageError{fmt.Errorf("--changed needs --base REV: the revision the site already has")}
			}
			o.Paths, o.Changed = args, changed
			o.Mirror.PlainHTTP = plain
			o.Mirror.Flags = registry.SourceFlags // named in its registry errors
			stderr := cmd.ErrOrStderr()
			o.Log = func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
			o.Progress = newProgress(stderr, "package")
			res, err := pipeline.Package(cmd.Context(), o)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "archive   %s (%s, sha256 %s)\n", o.Output, archive.Size(res.Bytes), res.SHA256)
			fmt.Fprintf(w, "images    %d (versions: %d); %d manifests, %d blobs (%s, each once)\n", len(res.Images), res.Versions, res.PackageResult.Manifests, res.Blobs, archive.Size(res.BlobBytes))
			if o.Cache != "" {
				printCache(w, stderr, o.Cache, res.PackageResult)
			}
			fmt.Fprintf(w, "packages  PackageManifests: %d\n", res.Manifests)
			for _, im := range res.Images {
				if im.Reduced {
					fmt.Fprintf(w, "reduced   %s: %s (source index %s): a reduced index gets a new digest\n", im.Ref, im.Digest, im.SourceDigest)
				}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.Output, "output", "o", "", "archive file to write (FILE.tgz; FILE.tgz.sha256 is written beside it)")
	fs.StringVar(&o.Source, "source", ".", "package repo checkout")
	fs.StringVar(&o.PackagesDir, "packages-dir", "packages", "directory of PackageManifests, relative to --source")
	fs.BoolVar(&changed, "changed", false, "package only the versions changed since --base")
	fs.StringVar(&o.Base, "base", "", "with --changed: the package repo revision to compare with (the source commit of the site's last archive, say)")
	fs.BoolVar(&o.NoFetch, "no-fetch", false, "never fetch from the package repo's origin to deepen a shallow clone")
	fs.StringSliceVar(&o.Platforms, "platforms", nil, "reduce image indexes to these platforms (os/arch[/variant]); --platforms alone: each manifest's spec.arch")
	fs.Lookup("platforms").NoOptDefVal = pipeline.PlatformsFromSpec
	fs.IntVar(&o.Level, "level", archive.DefaultLevel, "gzip level: 0 store, 1 fastest (layers are compressed already), 9 smallest")
	fs.StringVar(&o.Cache, "cache", "", "`DIR`: an OCI image layout kept between runs (created if missing; the output of crane pull --format oci works too): blobs and digest-pinned manifests found there are not read from the registries, and what is read is added")
	fs.BoolVar(&o.VerifyCache, "verify-cache", false, "hash every blob taken from --cache (a damaged one is read from the registry again); by default a cached blob of the right size is trusted, as it was checked when cached")
	fs.StringVar(&o.Mirror.Src.Username, "src-username", "", "source registry user name (default: docker config)")
	fs.StringVar(&o.Mirror.Src.Password, "src-password", "", "source registry password or token")
	fs.StringVar(&o.Mirror.CAFile, "ca-file", "", "PEM file of extra CA certificates to trust")
	fs.BoolVar(&plain, "plain-http", false, "use plain HTTP for the source registries")
	fs.BoolVar(&plain, "plain", false, "alias of --plain-http (violet)")
	withEnvHelp(fs)
	return cmd
}

// printCache prints the cache line of package: what came from the cache
// dir, and how much of the rest was added to it (a warning on stderr when
// some could not be).
func printCache(w, stderr io.Writer, dir string, res *archive.PackageResult) {
	fmt.Fprintf(w, "cache     %d of %d blobs (%s) read from %s", res.CachedBlobs, res.Blobs, archive.Size(res.CachedBytes), dir)
	if n := res.Blobs - res.CachedBlobs; n > 0 {
		fmt.Fprintf(w, "; of the %d read from the registries (%s), %d added to it", n, archive.Size(res.BlobBytes-res.CachedBytes), res.CacheAdded)
	}
	fmt.Fprintln(w)
	if res.CacheDamaged > 0 {
		fmt.Fprintf(stderr, "warning: %d cached blobs had the wrong digest (damaged on the disk): they were read from the registries again and replaced in %s\n", res.CacheDamaged, dir)
	}
	if res.CacheErr != nil {
		fmt.Fprintf(stderr, "warning: %v: the archive is complete, but what could not be cached is read from the registries again next time\n", res.CacheErr)
	}
}
