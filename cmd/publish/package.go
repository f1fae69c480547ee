package main

import (
	"fmt"
	"io"
	"os"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/sign"
	"github.com/operator-publish/publish/internal/verify"
	"github.com/spf13/cobra"
)

func newPackageCmd(inv *invocation) *cobra.Command {
	var (
		o       pipeline.PackageOptions
		source  sourceFlags
		src     srcRegistryFlags
		tls     tlsFlags
		retry   retryFlags
		catalog catalogFlags
		r       renderFlags
		changed bool
		sigs    bool
		signer  signFlags
		maxSize string
	)
	cmd := &cobra.Command{
		Use:   "package [DIR...] -o FILE.tgz|FILE.tar",
		Short: "Write an offline archive of bundles and related images for an air-gapped site (violet package)",
		Long: `package reads every bundle and related image of the package repo's versions (or
of the versions below the DIRs given, below --source: relative to it, or
absolute; with --changed only the versions changed since --base) and writes
FILE.tgz: one OCI image layout (oci-layout, index.json, blobs/sha256/...)
holding each blob once, manifests
byte for byte (digests preserved), each image annotated with its source
reference, and every PackageManifest of the repo under packages/. The archive
is deterministic (same input, same bytes) and FILE.tgz.sha256 is written
beside it. --platforms reduces image indexes to the manifests' spec.arch (or
the platforms given): reduced indexes get new digests. --cache DIR keeps an OCI
image layout of what was read, so that the next archive reads only what is new
from the registries. With --catalog URL|PATH (the catalog repo of the connected
side), the archive also carries the OCI catalog of --cluster: the catalog's
published state rendered through kustomize/clusters/<cluster>, for
publish push --oci on a site with a registry and no Git server. Each image's
signatures travel with it (--signatures, on by default): its cosign signature
and attestation tags, its referrers tag schema index and its OCI referrers
(Sigstore bundles), and those of each platform child; push puts them beside
the images.

-o NAME.tar writes a plain tar instead (as oc-mirror's archives are): the
layers are compressed already, so it is hardly larger, and push sends each
layer from the file to the registry without reading it.

--max-size SIZE splits the archive for media with a size limit: parts
NAME.part-0001.tgz, ... of at most SIZE, each with its .sha256 (and
signature with --cosign-key), and their index NAME.parts.json; a blob larger
than a part gets one of its own (--strict-size: an error). Run the same
command again after an interruption: complete parts are checked and kept.
--base-archive FILE (an earlier archive, or its NAME.digests.json) leaves
out every image and blob the site already has: a differential archive.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Output == "" {
				return &usageError{fmt.Errorf("-o FILE.tgz is required")}
			}
			if o.Level < 0 || o.Level > 9 {
				return &usageError{fmt.Errorf("--level %d: want 0 (store) to 9 (smallest)", o.Level)}
			}
			if archive.Uncompressed(o.Output) && inv.given("level") {
				return usagef("--level: -o %s is a plain tar, not compressed (--level is for FILE.tgz)", o.Output)
			}
			if o.VerifyCache && o.Cache == "" {
				return &usageError{fmt.Errorf("--verify-cache needs --cache DIR")}
			}
			if inv.given("max-size") {
				n, err := archive.ParseSize(maxSize)
				if err != nil {
					return usagef("--max-size: %v", err)
				}
				o.MaxSize = n
			} else if o.StrictSize {
				return usagef("--strict-size needs --max-size SIZE")
			}
			if changed && o.Base == "" {
				return &usageError{fmt.Errorf("--changed needs --base REV: the revision the site already has")}
			}
			if err := source.check(false, ""); err != nil {
				return err
			}
			reg := registryFlags{src: &src, tls: &tls, retry: &retry}
			if err := reg.apply(&o.Mirror); err != nil {
				return err
			}
			key, err := signer.load()
			if err != nil {
				return err
			}
			o.Mirror.SkipSignatures = !sigs
			o.Mirror.Flags = registry.SourceFlags // named in its registry errors
			o.Mirror.Logger = inv.log             // retries, requests that wait
			if catalog.url != "" {
				rs, err := r.resolve(inv.config)
				if err != nil {
					return err
				}
				if !rs.Caps.ArtifactObjects {
					return usagef("--catalog: the OCI catalog in the archive holds Artifact and ArtifactVersion objects, which the %s target does not render (--target, publish.yaml clusters.%s.target)", rs.Target, rs.Cluster)
				}
				o.Cluster, o.Render = rs.Cluster, rs.Render
				if o.Catalog, err = catalog.options(&tls); err != nil {
					return err
				}
			}
			o.Source, o.PackagesDir = source.source, source.packagesDir
			o.Paths, o.Changed = args, changed
			if inv.config != nil {
				for _, c := range inv.config.ClusterNames() {
					cs := inv.config.ClusterSettings(c)
					o.Clusters = append(o.Clusters, pipeline.ClusterOptions{Name: c, Include: cs.Include, Exclude: cs.Exclude})
				}
				o.ChartValues, o.KubeVersion = inv.config.ValuesFile, inv.config.KubernetesVersion
			}
			o.Log = inv.logf
			o.Verify = inv.imageVerifier()
			if o.Verify != nil {
				if o.Trust, err = verify.TrustFiles(inv.config); err != nil {
					return err
				}
			}
			o.Progress = inv.newProgress(cmd.ErrOrStderr(), "package")
			res, err := pipeline.Package(cmd.Context(), o)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if err := printArchive(w, key, o.Output, res.PackageResult); err != nil {
				return err
			}
			images := len(res.Images)
			if res.Catalog != "" {
				images-- // the OCI catalog: its own line below
			}
			fmt.Fprintf(w, "images    %d (versions: %d); %d manifests, %d blobs (%s, each once)\n", images, res.Versions, res.PackageResult.Manifests, res.Blobs, archive.Size(res.BlobBytes))
			if o.Cache != "" {
				printCache(w, inv, o.Cache, res.PackageResult)
			}
			fmt.Fprintf(w, "packages  PackageManifests: %d\n", res.Manifests)
			if res.Catalog != "" {
				fmt.Fprintf(w, "catalog   OCI catalog of cluster %s: %s\n", o.Cluster, res.Catalog)
			}
			images -= res.Signatures
			if res.Signatures > 0 {
				fmt.Fprintf(w, "signed    %d signatures, attestations and referrers of them\n", res.Signatures)
			}
			for _, warn := range res.Warnings {
				inv.warnf("%s", warn)
			}
			for _, im := range res.Images {
				if im.Reduced {
					fmt.Fprintf(w, "reduced   %s: %s (source index %s): a reduced index gets a new digest\n", im.Ref, im.Digest, im.SourceDigest)
				}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.Output, "output", "o", "", "archive file to write (FILE.tgz, or FILE.tar uncompressed; FILE.tgz.sha256 is written beside it)")
	source.register(fs)
	fs.BoolVar(&changed, "changed", false, "package only the versions changed since --base")
	signer.register(fs, "the archive (a Sigstore bundle beside it: FILE.tgz.sigstore.json)")
	registerSignatures(fs, &sigs, "carry each image's cosign signature and attestation tags (sha256-<hex>.sig/.att) and OCI referrers in the archive")
	fs.StringVar(&maxSize, "max-size", "", "split the archive into parts of at most `SIZE` (4G = 4 GiB, 4.7GB = 4.7e9 bytes, 4095M for FAT32): NAME.part-0001.tgz, ... and their index NAME.parts.json; a run cut short continues from the complete parts")
	fs.BoolVar(&o.StrictSize, "strict-size", false, "with --max-size: fail on a blob larger than a part (naming it and its image) instead of giving it a part of its own")
	fs.StringSliceVar(&o.BaseArchives, "base-archive", nil, "`FILE`s the site has already (earlier archives, their NAME.digests.json or NAME.parts.json; repeatable): leave out every image and blob they hold (a differential archive, which push refuses on a site without them)")
	fs.StringVar(&o.Base, "base", "", "with --changed: the package repo revision to compare with (the source commit of the site's last archive, say)")
	fs.BoolVar(&o.NoFetch, "no-fetch", false, "never fetch from the package repo's origin to deepen a shallow clone")
	fs.StringSliceVar(&o.Platforms, "platforms", nil, "reduce image indexes to these platforms (os/arch[/variant]); --platforms alone: each manifest's spec.arch")
	fs.Lookup("platforms").NoOptDefVal = pipeline.PlatformsFromSpec
	fs.IntVar(&o.Level, "level", archive.DefaultLevel, "gzip level of FILE.tgz: 0 store, 1 fastest (layers are compressed already), 9 smallest")
	fs.StringVar(&o.Cache, "cache", "", "`DIR`: an OCI image layout kept between runs (created if missing; the output of crane pull --format oci works too): blobs and digest-pinned manifests found there are not read from the registries, and what is read is added")
	fs.BoolVar(&o.VerifyCache, "verify-cache", false, "hash every blob taken from --cache (a damaged one is read from the registry again); by default a cached blob of the right size is trusted, as it was checked when cached")
	src.register(fs)
	src.registerMirrors(fs)
	tls.register(fs)
	retry.register(fs)
	catalog.readOnly = true
	catalog.register(fs, "read", "catalog Git repo of the connected side (URL or local path): carry the OCI catalog of --cluster, rendered from its state (publish/state/) (publish.yaml's catalog does not switch this on)")
	_ = fs.SetAnnotation("catalog", annNoConfig, []string{"true"})
	r.register(fs)
	withEnvHelp(fs)
	return cmd
}

// printArchive prints the archive (or its parts and index) with its
// sha256, and signs it with key (nil: not): each part and the index of a
// split archive. A failed signature removes what was written.
func printArchive(w io.Writer, key *sign.Key, out string, res *archive.PackageResult) error {
	if len(res.Parts) == 0 {
		fmt.Fprintf(w, "archive   %s (%s, sha256 %s)\n", out, archive.Size(res.Bytes), res.SHA256)
	} else {
		idx := archive.PartsPath(out)
		fmt.Fprintf(w, "archive   %s: %d parts (%s in all, index sha256 %s)\n", idx, len(res.Parts), archive.Size(res.Bytes), res.SHA256)
		for _, p := range res.Parts {
			kept := ""
			if p.Reused {
				kept = ", complete from an earlier run"
			}
			fmt.Fprintf(w, "part      %s (%s, %d blobs, sha256 %s%s)\n", p.Name, archive.Size(p.Size), p.Blobs, p.SHA256, kept)
		}
	}
	if res.BaseLeftOut > 0 {
		fmt.Fprintf(w, "base      %d images left out: the --base-archive holds them\n", res.BaseLeftOut)
	}
	if key == nil {
		return nil
	}
	target := out
	var b string
	var err error
	if len(res.Parts) == 0 {
		b, err = signArchive(key, out, res.SHA256)
	} else {
		target = archive.PartsPath(out)
		b, err = signParts(key, target, res.Parts)
	}
	if err != nil {
		// An archive without the signature asked for is not left to be
		// carried (the parts stay for the next run: its index goes).
		os.Remove(target)
		os.Remove(archive.ChecksumPath(target))
		return err
	}
	fmt.Fprintf(w, "signature %s (publish verify --key PUBLIC.pem %s)\n", b, target)
	return nil
}

// printCache prints the cache line of package: what came from the cache
// dir, and how much of the rest was added to it (a warning in the log when
// some could not be).
func printCache(w io.Writer, inv *invocation, dir string, res *archive.PackageResult) {
	fmt.Fprintf(w, "cache     %d of %d blobs (%s) read from %s", res.CachedBlobs, res.Blobs, archive.Size(res.CachedBytes), dir)
	if n := res.Blobs - res.CachedBlobs; n > 0 {
		fmt.Fprintf(w, "; of the %d read from the registries (%s), %d added to it", n, archive.Size(res.BlobBytes-res.CachedBytes), res.CacheAdded)
	}
	fmt.Fprintln(w)
	if res.CacheDamaged > 0 {
		inv.warnf("%d cached blobs had the wrong digest (damaged on the disk): they were read from the registries again and replaced in %s", res.CacheDamaged, dir)
	}
	if res.CacheErr != nil {
		inv.warnf("%v: the archive is complete, but what could not be cached is read from the registries again next time", res.CacheErr)
	}
}
