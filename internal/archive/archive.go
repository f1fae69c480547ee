// Package archive writes and reads the offline archive of `publish package`,
// `publish push` and `publish verify` (docs/design.md#airgap): a gzip-compressed tar
// (or, as NAME.tar, a plain one: Uncompressed) holding one OCI image layout (image-spec v1.1 "image-layout.md":
// oci-layout, index.json, blobs/sha256/<hex>) with every bundle and related
// image of the packaged versions, each blob once, their signatures
// (KindSignature entries: cosign tags, referrers), the PackageManifests
// under packages/, the verify policy's trust material under trust/, and
// digests.json (DigestList: what a site holds once it pushed the archive,
// for differential archives). WriteParts splits it into parts for media
// with a size limit (parts.go).
//
// The archive is deterministic: entries in a fixed order (oci-layout,
// index.json, digests.json, packages/… sorted by path, trust/… sorted by
// path, manifests parents first, then every other blob sorted by digest),
// fixed times, owners and modes, and a gzip header without name or time.
// The same images and manifests give the same bytes.
//
// Reading is streaming and bounded: blobs are hashed while they are read and
// never held in memory; only index.json, image manifests and
// PackageManifests (all small and capped) are kept, and by Verify the
// small blobs of the signature entries (MaxSignatureBlob).
package archive

import (
	"strings"
	"time"
)

// Uncompressed says whether the archive at path is a plain tar by its
// name: NAME.tar or NAME.part-NNNN.tar (PackageOptions.Uncompressed);
// anything else is gzip-compressed (NAME.tgz). Reading does not rely on
// the name: Walk tells the two apart by their first bytes.
func Uncompressed(path string) bool { return strings.HasSuffix(path, ".tar") }

// Annotations written on every index.json entry.
const (
	// AnnotationRefName is the OCI annotation naming the image reference
	// (image-spec annotations.md); publish writes the full source reference.
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationSource is the source reference the image was read from.
	AnnotationSource = "io.operator-publish.source"
	// AnnotationSourceDigest is the digest of the image index at the source
	// when --platforms reduced it (the reduced index has a new digest).
	AnnotationSourceDigest = "io.operator-publish.source-digest"
	// AnnotationTag is the tag a bundle carries at the destination when its
	// source reference is pinned by digest (ArtifactVersion.spec.tag).
	AnnotationTag = "io.operator-publish.tag"
	// AnnotationKind is "bundle" for a bundle image, "image" for a related
	// image. Bundles are pushed after every related image.
	AnnotationKind = "io.operator-publish.kind"
	// AnnotationSourceCommit and AnnotationSourceRepo, on index.json itself,
	// name the package repo commit the archive was made from (recorded in
	// the catalog's publish/state.yaml by push --catalog).
	AnnotationSourceCommit = "io.operator-publish.source-commit"
	AnnotationSourceRepo   = "io.operator-publish.source-repo"
	// AnnotationCluster names the cluster of an OCI catalog entry
	// (KindCatalog).
	AnnotationCluster = "io.operator-publish.cluster"
	// AnnotationCatalogLocations, on an OCI catalog entry, lists
	// (comma-separated, sorted) the bundle locations REGISTRY/REPOSITORY
	// its Artifacts name as the catalog's state records them, the overlay
	// having left them as they are: the connected side's registry, which
	// publish push checks against where it puts the bundles.
	AnnotationCatalogLocations = "io.operator-publish.catalog-locations"
	// AnnotationSubject is the digest of the manifest a KindSignature
	// entry signs or attests (its subject, or the digest its cosign tag
	// names).
	AnnotationSubject = "io.operator-publish.subject"
	// AnnotationArtifacts, on a bundle or related image entry, lists
	// (comma-separated, sorted) the artifacts (PackageManifest
	// spec.artifact names) whose packaged versions need the image:
	// publish push --only and --cluster push the images of a subset.
	AnnotationArtifacts = "io.operator-publish.artifacts"
)

// Kinds of index.json entries (AnnotationKind).
const (
	KindBundle = "bundle"
	KindImage  = "image"
	// KindCatalog is the OCI catalog of one cluster (internal/ocicatalog:
	// rendered/<cluster> as a single-layer artifact), made by `publish
	// package --catalog` and pushed by `publish push --oci`: it has no
	// source registry, and is not mapped like the images.
	KindCatalog = "oci-catalog"
	// KindSignature is a signature of an image of the archive, read from
	// its source repository: a cosign signature or attestation tag
	// (sha256-<hex>.sig, .att), the referrers tag schema index
	// (sha256-<hex>, distribution-spec "Referrers Tag Schema"), or a
	// referrer by digest (a Sigstore bundle, from the referrers API).
	// Its reference names the source repository with that tag or digest;
	// push puts it into the image's destination repository after every
	// image.
	KindSignature = "signature"
)

// CatalogRef is the reference name of the OCI catalog of cluster in
// index.json (org.opencontainers.image.ref.name and AnnotationSource):
// "oci-catalog:<cluster>", a name no source image has (no registry host).
func CatalogRef(cluster string) string { return KindCatalog + ":" + cluster }

// Paths inside the archive.
const (
	LayoutFile  = "oci-layout"
	IndexFile   = "index.json"
	BlobsDir    = "blobs/sha256/"
	PackagesDir = "packages/"
	// ChartClustersDir, below PackagesDir, holds what each cluster of the
	// connected side renders its charts with, so that push --catalog
	// renders them as run does: <cluster>.yaml (its publish.yaml
	// kubernetesVersion) and <cluster>/<artifact>.yaml (its values file
	// of chart <artifact>, clusters.<cluster>.values.<artifact>).
	ChartClustersDir = ".clusters/"
	// TrustDir holds the trust material of the verify policy
	// (PackageOptions.Trust): trust/policy.json, the public keys and the
	// Sigstore trusted roots it names.
	TrustDir     = "trust/"
	layoutData   = `{"imageLayoutVersion":"1.0.0"}`
	checksumExt  = ".sha256"
	fileMode     = 0o644
	maxNameBytes = 1024
)

// fixedTime is the modification time of every entry (the Unix epoch would
// be read as "no time" by some tools).
var fixedTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Limits caps what a reader accepts, so that a hostile or corrupt archive
// cannot fill the disk or the memory. Zero fields take the defaults.
type Limits struct {
	// Blob is the largest blob, in bytes (default 16 GiB).
	Blob int64
	// Manifest is the largest manifest, index.json or PackageManifest, in
	// bytes: these are held in memory (default 4 MiB, the limit registries
	// apply to manifests).
	Manifest int64
	// Total is the most the archive may expand to, in bytes (default 1 TiB).
	Total int64
	// Entries is the most entries (default 1,000,000).
	Entries int
}

func (l Limits) withDefaults() Limits {
	if l.Blob <= 0 {
		l.Blob = 16 << 30
	}
	if l.Manifest <= 0 {
		l.Manifest = 4 << 20
	}
	if l.Total <= 0 {
		l.Total = 1 << 40
	}
	if l.Entries <= 0 {
		l.Entries = 1_000_000
	}
	return l
}

// ChecksumPath is the checksum file written beside an archive:
// FILE.tgz.sha256, in the format of sha256sum ("<hex>  <file name>").
func ChecksumPath(archive string) string { return archive + checksumExt }
