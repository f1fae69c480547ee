package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/sign"
	"github.com/spf13/cobra"
)

func newVerifyCmd(inv *invocation) *cobra.Command {
	var key archiveKey
	var trust trustFlags
	cmd := &cobra.Command{
		Use:   "verify FILE.tgz|FILE.tar|NAME.parts.json|DIR",
		Short: "Check an offline archive (checksum, every blob digest, structure) without pushing",
		Long: `verify reads FILE.tgz once and checks it as push would, without any registry:
the sha256 of the file against FILE.tgz.sha256, every entry (no links,
devices, absolute paths, "..", duplicates; sizes within the limits), every
blob against its digest, and the OCI layout: oci-layout, index.json with a
source reference per image, every manifest and blob they name, every
PackageManifest. With --key PUBLIC.pem, the archive's signature
(FILE.tgz.sigstore.json, from publish package --cosign-key) must verify with
that key, offline. The trust material of the verify policy (trust/: its keys
and Sigstore trusted roots) must parse; a certificate of a trusted root that
expires before --valid-until is a warning. With trust material, the
signatures the archive carries (cosign tags and referrers) of every image
are verified with it, offline, in each rule's mode (enforce, if-signed,
warn, off) as push verifies them at the site, and counted per artifact
(signed, unsigned, failed). Exit 1 when the archive is damaged or
incomplete, its trust material does not parse, an image fails its rule,
or the archive's signature does not verify.

A split archive (publish package --max-size) is named by its index
NAME.parts.json or the directory holding it: every part is checked against
the sha256 the index lists, and a part missing, truncated or damaged is
named.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := trust.until(time.Now()); err != nil {
				return err
			}
			res, err := archive.Verify(args[0], archive.Limits{}, inv.newProgress(cmd.ErrOrStderr(), "verify"))
			if err != nil {
				return &pipeline.InputError{Err: err}
			}
			c := res.Contents
			w := cmd.OutOrStdout()
			for _, warn := range c.Warnings {
				inv.warnf("%s", warn)
			}
			bundles, images, sigs := 0, 0, 0
			var catalogs []archive.IndexEntry
			for _, im := range c.Images {
				switch {
				case im.Subject != "":
					sigs++
					continue
				case im.Catalog != "":
					catalogs = append(catalogs, im)
					continue
				case im.Bundle:
					bundles++
				}
				images++
			}
			fmt.Fprintf(w, "images    %d (bundles: %d), %d manifests, %d blobs (%s)\n", images, bundles, len(c.Manifests), c.Blobs, archive.Size(c.BlobBytes))
			if sigs > 0 {
				fmt.Fprintf(w, "signed    %d signatures, attestations and referrers\n", sigs)
			}
			fmt.Fprintf(w, "packages  PackageManifests: %d\n", len(c.Packages))
			for _, cat := range catalogs {
				fmt.Fprintf(w, "catalog   OCI catalog of cluster %s: %s\n", cat.Catalog, cat.Desc.Digest)
			}
			if commit := c.Annotations[archive.AnnotationSourceCommit]; commit != "" {
				// the --base of the next `publish package --changed`
				fmt.Fprintln(w, strings.TrimSpace(fmt.Sprintf("source    %s %s", commit, c.Annotations[archive.AnnotationSourceRepo])))
			}
			if base := c.Annotations[archive.AnnotationBase]; base != "" && c.Digests != nil {
				// a differential archive: push checks the site has these
				fmt.Fprintf(w, "base      %s (differential: %d images it promised must be at the destination)\n", base, len(c.Digests.BaseImages))
			}
			sum := "no .sha256 file to compare"
			if res.Checksum {
				sum = "matches " + archive.ChecksumPath(args[0])
			}
			if res.Index != "" {
				sum = fmt.Sprintf("of %s; %d parts, each matches the sha256 it lists", res.Index, len(res.Parts))
			}
			fmt.Fprintf(w, "sha256    %s (%s)\n", res.SHA256, sum)
			if len(c.Trust) > 0 {
				rep, err := trust.check(c.Trust, time.Now())
				if err != nil {
					return &pipeline.InputError{Err: err}
				}
				fmt.Fprintf(w, "trust     %d verify rules, %d keys, %d trusted roots (trust/policy.json)\n", rep.Rules, rep.Keys, rep.Roots)
				for _, e := range rep.Expiring {
					inv.warnf("%s", e)
				}
				v, err := archiveVerifier(c.Trust, "")
				if err != nil {
					return &pipeline.InputError{Err: fmt.Errorf("the archive's trust material: %w", err)}
				}
				if v != nil {
					if _, err := pipeline.VerifyArchive(w, inv.warnf, v, c); err != nil {
						return err
					}
				}
			}
			if key.key != "" {
				if err := key.checkRead(args[0], res); err != nil {
					return &pipeline.InputError{Err: err}
				}
				if res.Index != "" {
					fmt.Fprintf(w, "signature %s and the %d parts' verify with --key\n", res.Index+sign.BundleFileSuffix, len(res.Parts))
				} else {
					fmt.Fprintf(w, "signature %s verifies with --key\n", args[0]+sign.BundleFileSuffix)
				}
			}
			fmt.Fprintf(w, "verify ok %s\n", args[0])
			return nil
		},
	}
	key.register(cmd.Flags())
	trust.register(cmd.Flags())
	withEnvHelp(cmd.Flags())
	return cmd
}
