package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/spf13/cobra"
)

// pushCmd holds the flag groups of push: the destination, TLS, and for
// --catalog the groups of run (render, catalog, commit, publish.yaml).
type pushCmd struct {
	o       pipeline.PushOptions
	source  sourceFlags
	dst     dstRegistryFlags
	tls     tlsFlags
	r       renderFlags
	catalog catalogFlags
	commit  commitFlags
	oci     ociFlags
	sign    signFlags
	key     archiveKey
	trust   trustFlags
	charts  chartRepoFlags
}

func newPushCmd(inv *invocation) *cobra.Command { return (&pushCmd{}).command(inv) }

// options checks the flags and fills p.o for the archive. Errors are usage
// errors naming the flag as typed.
func (p *pushCmd) options(inv *invocation, archive string) error {
	o := &p.o
	if err := p.dst.require(); err != nil {
		return err
	}
	if o.SkipPush && o.SkipCRs {
		return usagef("--skip-push and --skip-crs together leave nothing to do")
	}
	if o.NoAuth {
		// Credentials on the command line contradict --no-auth; those of
		// the environment (PUBLISH_DST_PASSWORD for publish run, say) are
		// left unused.
		for _, f := range []string{"dst-username", "dst-password"} {
			if inv.given(f) {
				return usagef("--no-auth and %s exclude each other", spelled(p.dst.fs, f))
			}
		}
		p.dst.creds = mirror.Credentials{}
	}
	reg := registryFlags{dst: &p.dst, tls: &p.tls}
	if err := reg.apply(&o.Mirror); err != nil {
		return err
	}
	o.Archive = archive
	if p.oci.ref != "" {
		if _, err := p.oci.resolve(nil, "global"); err != nil {
			return err
		}
	}
	// The archive's OCI catalog of a cluster: --oci, else publish.yaml.
	o.OCI = func(cluster string) string {
		ref, _ := p.oci.resolve(inv.config, cluster)
		return ref
	}
	for _, n := range o.Only {
		if n == "" {
			return usagef("--only: an empty artifact name; give --only NAME[,NAME...] (spec.artifact of the PackageManifests)")
		}
	}
	if p.catalog.url != "" && !o.SkipCRs {
		// The render and commit half of publish run, wired as run.
		rs, err := p.r.resolve(inv.config)
		if err != nil {
			return err
		}
		if err := p.selection(rs); err != nil {
			return err
		}
		po := &o.Options
		po.Cluster, po.Target, po.TargetSettings, po.Render = rs.Cluster, rs.Target, rs.TargetSettings, rs.Render
		po.Lint = inv.lintConfig()
		po.ChartRepoAuth = p.charts.auth
		if po.OCI, err = p.oci.resolve(inv.config, rs.Cluster); err != nil {
			return err
		}
		po.NoOCI = p.oci.noOCI
		if po.Catalog, err = p.catalog.options(&p.tls); err != nil {
			return err
		}
		if po.CommitTemplate, err = p.commit.apply(&po.Catalog); err != nil {
			return err
		}
	} else if o.SkipPush {
		return usagef("--skip-push needs --catalog: it renders and commits the catalog only")
	} else if inv.given("cluster") {
		rs, err := p.r.resolve(inv.config)
		if err != nil {
			return err
		}
		if err := p.selection(rs); err != nil {
			return err
		}
	}
	s, err := p.sign.signer()
	if err != nil {
		return err
	}
	if s != nil {
		s.Version = versionString()
		o.Options.Sign = s
	}
	o.Options.SignImages = inv.config != nil && inv.config.Sign.Images
	if inv.config != nil {
		o.Options.KubeVersion = inv.config.KubernetesVersion // where the archive carries none
	}
	if o.Options.SignImages && s == nil {
		return usagef("publish.yaml sign.images: true signs each pushed image with the site's key: give --cosign-key")
	}
	if _, err := p.trust.until(time.Now()); err != nil {
		return err
	}
	o.Trust = p.trust.pushTrust(o.TempDir)
	o.Options.Log = inv.log
	return nil
}

// selection takes the artifact selection of the cluster rs
// (publish.yaml clusters.<cluster>.include/exclude) as the push's subset,
// as publish run selects the cluster's artifacts. Errors: a pattern
// path.Match refuses, naming publish.yaml.
func (p *pushCmd) selection(rs renderSettings) error {
	p.o.Selection = pipeline.ClusterOptions{Name: rs.Cluster, Include: rs.Include, Exclude: rs.Exclude}
	return pipeline.CheckSelection(p.o.Selection)
}

func (p *pushCmd) command(inv *invocation) *cobra.Command {
	o := &p.o
	cmd := &cobra.Command{
		Use:   "push FILE.tgz|FILE.tar|NAME.parts.json|DIR --dst-registry HOST[:PORT][/PREFIX]",
		Short: "Load an offline archive into a registry and, with --catalog, publish the catalog (violet push)",
		Long: `push reads FILE.tgz once, checking every blob digest as it reads, and pushes
every image to --dst-registry (violet: --dst-repo) with the repository
mapping of publish run (<dst-registry>/<source repository path>, same tag or
digest): blobs the registry lacks are uploaded once and mounted into the
other repositories that need them; manifests go last, related images before
bundles, and only when the whole archive checked out. What the registry has
already is skipped, so running push again after an interruption resumes it.

With --catalog URL|PATH it then renders the PackageManifests inside the
archive and commits the catalog exactly as publish run would (the same
cluster, target, lint rules and publish.yaml): the air-gapped site runs the
GitOps step from the archive alone. --skip-push renders and commits only
(the images must be there); --skip-crs pushes images only.

An archive made with publish package --catalog carries the OCI catalog of a
cluster: --oci REGISTRY/REPOSITORY[:TAG] (or publish.yaml clusters.<cluster>.oci)
pushes it there with the images (tag default: the cluster name), for a site
with a registry and no Git server. With --catalog, the catalog rendered here
is pushed to --oci instead.

One archive serves several sites: --only NAME[,NAME...] pushes the images
of these artifacts only, and --cluster C (with publish.yaml) those that
clusters.C.include/exclude select; the catalog change then lists and
delists that subset only. --key PUBLIC.pem checks the archive's signature
(FILE.tgz.sigstore.json) before anything is pushed; --cosign-key signs the
OCI catalog pushed to --oci. With the verify policy's trust material in the
archive (trust/), every image pushed is verified at the destination with it,
offline, and --cosign-key attaches a signed verification summary to each.

A split archive (publish package --max-size) is pushed from its index
NAME.parts.json or the directory of its parts: each part is checked against
the index, and a missing or damaged one is named before anything is tagged.
A differential archive (publish package --base-archive) is refused, with the
list, unless the destination has every image its base promised (one HEAD
each).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := p.options(inv, args[0]); err != nil {
				return err
			}
			if sum, err := p.key.check(args[0]); err != nil {
				return &pipeline.InputError{Err: fmt.Errorf("%w; nothing pushed", err)}
			} else if sum != "" {
				inv.logf("push: the signature of %s verifies with --key (sha256 %s)", args[0], sum)
			}
			o.Progress = inv.newProgress(cmd.ErrOrStderr(), "push")
			res, err := pipeline.Push(cmd.Context(), *o)
			if res != nil && res.Push != nil {
				printPush(cmd, res.Push)
			}
			if err != nil {
				return err
			}
			if res.Catalog != nil {
				printResult(cmd, res.Catalog)
				inv.reportRun(res.Catalog.Changes, res.Catalog.Commit, res.Catalog.Clusters)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	p.source.registerConfig(fs)
	p.dst.register(fs, "push access")
	fs.BoolVar(&o.NoAuth, "no-auth", false, "send no credentials (not even the docker config's)")
	p.tls.register(fs)
	fs.IntVar(&o.Jobs, "jobs", archive.DefaultJobs, "blob uploads and mounts in flight (a FILE.tgz's layers are read ahead of their uploads through N x 16 MiB of memory, a FILE.tar's go from the file; configs and blobs up to 1 MiB are read whole; nothing is written to the disk); not --concurrency of run and mirror, which bounds every registry operation of a copy together")
	fs.BoolVar(&o.SkipPush, "skip-push", false, "push no image: render and commit the catalog only (violet --skip-push)")
	fs.BoolVar(&o.SkipCRs, "skip-crs", false, "push images only, no catalog (violet --skip-crs)")
	fs.StringSliceVar(&o.Only, "only", nil, "push and publish these artifacts only (spec.artifact names; repeatable or comma-separated): their images, and a catalog change listing theirs only, every other artifact kept as the catalog has it")
	p.catalog.register(fs, "push", "catalog Git repo (URL or local path): render and commit it after the push (publish.yaml's catalog does not switch this on)")
	_ = fs.SetAnnotation("catalog", annNoConfig, []string{"true"})
	p.commit.register(fs)
	p.charts.register(fs)
	p.r.register(fs)
	p.oci.register(fs)
	p.sign.register(fs, "the OCI catalog pushed to --oci, each chart pushed, a verification summary of each image the archive's trust material verified, and with publish.yaml sign.images each image pushed")
	p.key.register(fs)
	p.trust.register(fs)
	withEnvHelp(fs)
	return cmd
}

// printPush says what was pushed (stdout): one line per image with its
// digest-pinned destination, then the totals.
func printPush(cmd *cobra.Command, p *archive.PushResult) {
	w := cmd.OutOrStdout()
	pushed := 0
	for _, im := range p.Images {
		state := "pushed"
		if im.Skipped {
			state = "present"
		} else {
			pushed++
		}
		fmt.Fprintf(w, "%-9s %s\n", state, pinned(im.Destination, im.Digest))
	}
	fmt.Fprintf(w, "images    %d pushed, %d already there; blobs %d pushed (%s), %d mounted, %d already there\n",
		pushed, len(p.Images)-pushed, p.BlobsPushed, archive.Size(p.BytesPushed), p.BlobsMounted, p.BlobsSkipped)
	if p.BaseImages > 0 {
		fmt.Fprintf(w, "base      %d images of the base archive already there (differential archive)\n", p.BaseImages)
	}
	if p.Signatures > 0 {
		fmt.Fprintf(w, "signed    %d signatures, attestations and referrers: %d pushed, %d already there\n", p.Signatures, p.SignaturesPut, p.Signatures-p.SignaturesPut)
	}
}

// pinned is ref@digest, or ref when it names its digest already (an image
// the source pinned by digest).
func pinned(ref, digest string) string {
	if digest == "" || strings.HasSuffix(ref, "@"+digest) {
		return ref
	}
	return ref + "@" + digest
}
