// Package verify checks image signatures against the verify policy of
// publish.yaml (internal/config VerifyEntry; docs/signatures.md) before
// anything is mirrored. It finds two forms of signature for an image
// digest:
//
//   - Sigstore bundles attached as OCI referrers (artifactType
//     application/vnd.dev.sigstore.bundle.v0.3+json, the layout of cosign's
//     specs/BUNDLE_SPEC.md), read through the referrers API or, on
//     registries without it, the referrers tag schema
//     (go-containerregistry's remote.Referrers falls back by itself);
//   - legacy cosign signature tags, sha256-<hex>.sig: an image whose layers
//     are simple-signing payloads with the signature in the
//     dev.cosignproject.cosign/signature annotation.
//
// Bundles are verified with sigstore-go: with a public key offline (no
// transparency log needed, as `cosign verify --insecure-ignore-tlog`), or
// keylessly against a trusted root file (Fulcio CA, transparency log and
// timestamp authorities of the policy; no network). A .sig tag is verified
// with the public key; keyless .sig tags are not verified (yet): such an
// image is reported untrusted, with that reason.
//
// Only internal/verify imports sigstore-go: the pipeline sees the
// pipeline.ImageVerifier interface and model.Verification.
package verify

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/digitorus/timestamp"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/config"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/sign"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"
)

// Media types and annotations of the signature forms read here: those
// internal/sign writes.
const (
	// BundleArtifactType is the artifactType of a Sigstore bundle referrer
	// (and the media type of its one layer).
	BundleArtifactType = sign.BundleArtifactType
	// SimpleSigningMediaType is the layer media type of a cosign .sig tag.
	SimpleSigningMediaType = sign.SimpleSigningMediaType
	// SignatureAnnotation holds the base64 signature of a .sig layer.
	SignatureAnnotation = sign.SignatureAnnotation
	// CertificateAnnotation holds the PEM certificate of a keyless .sig
	// layer.
	CertificateAnnotation = "dev.sigstore.cosign/certificate"
)

// emptyMediaType is the OCI empty descriptor's media type, the config of a
// bundle referrer.
const emptyMediaType = "application/vnd.oci.empty.v1+json"

// errNotBundle: a referrer that is no Sigstore bundle (an SBOM, another
// attestation format).
var errNotBundle = errors.New("not a Sigstore bundle")

// errSummary: a bundle that verifies but holds a verification summary
// (SLSA VSA), which is no signature of the image.
var errSummary = errors.New("a verification summary, not a signature")

// maxBundle bounds what is read of one bundle or signature layer.
const maxBundle = 1 << 20

// Verifier checks images against a policy. Results are cached by
// repository and digest for the life of the Verifier (one run); it is safe
// for concurrent use.
type Verifier struct {
	file    string // publish.yaml
	cfg     *config.Config
	entries []*entry
	mu      sync.Mutex
	cache   map[string]*cached
}

type cached struct {
	once sync.Once
	res  result
}

// entry is one compiled policy entry.
type entry struct {
	cfg      config.VerifyEntry
	where    string // publish.yaml:LINE
	digest   string // ruleDigest
	expected string
	// key: the public key and its sigstore-go verifier.
	key      crypto.PublicKey
	keyVer   signature.Verifier
	bundleV  *sgverify.Verifier
	identity *sgverify.CertificateIdentity
}

// New compiles the verify policy of c. It returns nil (no policy: nothing
// is verified) when c has no verify entries. Errors are *config.Error at
// the line of the entry: a key sigstore cannot load, a trusted root that
// is not a Sigstore trusted root.
func New(c *config.Config) (*Verifier, error) {
	if c == nil || len(c.Verify) == 0 {
		return nil, nil
	}
	v := &Verifier{file: c.Path, cfg: c, cache: map[string]*cached{}}
	for i, e := range c.Verify {
		en := &entry{cfg: e, where: fmt.Sprintf("%s:%d", config.FileName, e.Line), digest: ruleDigest(e)}
		line := func(field string) int {
			if l := e.Lines[field]; l > 0 {
				return l
			}
			return e.Line
		}
		fail := func(field string, err error) error {
			return &config.Error{Path: c.Path, Line: line(field), Msg: fmt.Sprintf("verify[%d]: %v", i, err)}
		}
		if e.Mode != config.VerifyOff {
			switch {
			case e.KeyPEM != nil:
				pub, kv, bv, err := keyVerifier(e.KeyPEM)
				if err != nil {
					return nil, fail("key", err)
				}
				en.key, en.keyVer, en.bundleV = pub, kv, bv
				en.expected = "signed with key " + keyName(e.Key)
			case e.Keyless != nil:
				tr, err := root.NewTrustedRootFromJSON(e.TrustedRootJSON)
				if err != nil {
					return nil, fail("trustedRoot", fmt.Errorf("trustedRoot %s does not parse as a Sigstore trusted root: %w", e.TrustedRoot, err))
				}
				opts := []sgverify.VerifierOption{sgverify.WithObserverTimestamps(1)}
				if len(tr.RekorLogs()) > 0 {
					opts = append(opts, sgverify.WithTransparencyLog(1))
				}
				if len(tr.CTLogs()) > 0 {
					opts = append(opts, sgverify.WithSignedCertificateTimestamps(1))
				}
				bv, err := sgverify.NewVerifier(tr, opts...)
				if err != nil {
					return nil, fail("trustedRoot", err)
				}
				k := e.Keyless
				id, err := sgverify.NewShortCertificateIdentity(k.Issuer, k.IssuerRegexp, k.Subject, k.SubjectRegexp)
				if err != nil {
					return nil, fail("keyless", err)
				}
				en.bundleV, en.identity = bv, &id
				en.expected = "keyless " + k.String()
			}
		}
		v.entries = append(v.entries, en)
	}
	return v, nil
}

// ruleDigest is the SHA-256 (hex) of what decides in e: its pattern,
// mode, index, the key (PEM, as read) or the keyless identity and the
// trusted root (its content's SHA-256), as JSON in that order. A
// verification summary names its policy by it: two runs under the same
// rule give the same digest, whatever its line.
func ruleDigest(e config.VerifyEntry) string {
	root := ""
	if e.TrustedRootJSON != nil {
		h := sha256.Sum256(e.TrustedRootJSON)
		root = "sha256:" + hex.EncodeToString(h[:])
	}
	data, _ := json.Marshal(struct {
		Match, Mode, Index, Key string
		Keyless                 *config.Keyless
		TrustedRoot             string
	}{e.Match, e.Mode, e.Index, string(e.KeyPEM), e.Keyless, root})
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// keyVerifier loads a PEM public key (sign.KeyVerifier): the key, its
// signature verifier (for .sig tags) and a sigstore-go verifier of key
// bundles (offline: no transparency log, no timestamps).
func keyVerifier(keyPEM []byte) (crypto.PublicKey, signature.Verifier, *sgverify.Verifier, error) {
	return sign.KeyVerifier(keyPEM)
}

// VerifyDigestBundle checks that bundleJSON (a Sigstore bundle, as
// publish package --sign-key writes FILE.tgz.sigstore.json, or cosign
// sign-blob --bundle) holds a signature of the SHA-256 digest by the PEM
// public key keyPEM, offline. Errors say whether the key does not parse,
// the bundle does not parse, or the signature does not verify (the file
// or its bundle changed, or another key signed it).
func VerifyDigestBundle(bundleJSON, digest, keyPEM []byte) error {
	_, _, bv, err := keyVerifier(keyPEM)
	if err != nil {
		return err
	}
	var b sgbundle.Bundle
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		return fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	if _, err := bv.Verify(&b, sgverify.NewPolicy(sgverify.WithArtifactDigest("sha256", digest), sgverify.WithKey())); err != nil {
		return fmt.Errorf("the signature does not verify with this key (the file or its bundle changed, or another key signed it): %w", err)
	}
	return nil
}

func keyName(k string) string {
	if strings.Contains(k, "-----BEGIN") {
		return "(inline in " + config.FileName + ")"
	}
	return k
}

// Unmatched returns the publish.yaml path and the policy entries (not off)
// that match none of refs (image references; unparsable ones are
// skipped): a pattern that matches nothing is most likely a typo.
func (v *Verifier) Unmatched(refs []string) (string, []config.VerifyEntry) {
	if v == nil {
		return "", nil
	}
	var repos []string
	for _, r := range refs {
		if ref, err := name.ParseReference(r); err == nil {
			repos = append(repos, ref.Context().Name())
		}
	}
	var out []config.VerifyEntry
	for _, e := range v.cfg.UnusedVerifyEntries(repos) {
		if e.Mode != config.VerifyOff {
			out = append(out, e)
		}
	}
	return v.file, out
}

// lookup returns the first entry matching repo, nil when none does.
func (v *Verifier) lookup(repo string) *entry {
	for _, e := range v.entries {
		if e.cfg.MatchRepository(repo) {
			return e
		}
	}
	return nil
}

// Covers reports whether the policy has an entry (not off) for ref: the
// image must then be verified.
func (v *Verifier) Covers(ref string) bool {
	if v == nil {
		return false
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return false
	}
	e := v.lookup(r.Context().Name())
	return e != nil && e.cfg.Mode != config.VerifyOff
}

// Verify checks the signatures of ref (as a manifest names it) with the
// policy entry that matches its registry/repository. opts reach the
// source registry (credentials, TLS); remote.WithContext(ctx) is added.
// The result's Status is model.VerifyNotRequired when no entry (or an off
// entry) matches. An image read with no signature at all is unsigned with
// NoSignature set (what mode if-signed accepts); an image that does not
// exist is unsigned without it. A registry failure that kept the image or
// any of its signatures from being read, when no signature verified, is
// unsigned with the failure in Err (no verdict: the caller stops with it).
func (v *Verifier) Verify(ctx context.Context, ref string, opts []remote.Option) model.Verification {
	return v.VerifyAt(ctx, ref, ref, opts)
}

// VerifyAt is Verify of ref read at read: the policy entry is that of
// ref (the image's name), the image and its signatures are read at read
// (a source mirror's copy of it, registry.Client.ReadRef). A read that
// does not parse is reported as ref not parsing: not verified.
func (v *Verifier) VerifyAt(ctx context.Context, ref, read string, opts []remote.Option) model.Verification {
	return v.verifyIn(ref, read, remoteImages(append(append([]remote.Option(nil), opts...), remote.WithContext(ctx))))
}

// VerifyArchive is Verify of ref (an image's source reference, as the
// archive's index.json names it) read in the OCI layout of an archive
// (c, from archive.Verify: its manifests and the blobs of its signature
// entries) instead of a registry: offline. A manifest or blob the
// archive lacks is a missing one (unsigned), never a registry failure.
func (v *Verifier) VerifyArchive(ref string, c *archive.Contents) model.Verification {
	return v.verifyIn(ref, ref, newArchiveImages(c))
}

// verifyIn is VerifyAt reading through src.
func (v *Verifier) verifyIn(ref, read string, src images) model.Verification {
	out := model.Verification{Image: ref, Status: model.VerifyNotRequired}
	if v == nil {
		return out
	}
	named, err := name.ParseReference(ref)
	if err != nil {
		return out
	}
	r, err := name.ParseReference(read)
	if err != nil {
		return out
	}
	e := v.lookup(named.Context().Name())
	if e == nil || e.cfg.Mode == config.VerifyOff {
		if e != nil {
			out.Policy = e.where
		}
		return out
	}
	out.Mode, out.Policy, out.Expected, out.PolicyDigest = e.cfg.Mode, e.where, e.expected, e.digest
	desc, im, err := src.get(r)
	if err != nil {
		out.Status, out.Found = model.VerifyUnsigned, "the image could not be read: "+registryReason(err)
		if !isNotFound(err) {
			out.Err = err // the registry's failure, not the image's
		}
		return out
	}
	out.Digest = desc.Digest.String()
	digests, what := signedDigests(desc, im, e.cfg.Index)
	return v.judge(out, e, r.Context(), digests, what, src)
}

// signedDigests returns the digests whose signatures decide for desc:
// its own, or with index children (IndexChildren) those of the platform
// children of an image index (im, its manifest), each with how a finding
// names it ("" for the image itself).
func signedDigests(desc v1.Descriptor, im *v1.IndexManifest, index string) ([]v1.Hash, []string) {
	if im == nil || index != config.IndexChildren {
		return []v1.Hash{desc.Digest}, []string{""}
	}
	var digests []v1.Hash
	var what []string
	for _, m := range im.Manifests {
		if m.Platform != nil && m.Platform.OS == "unknown" {
			continue // an attestation manifest (buildkit), not a platform
		}
		digests = append(digests, m.Digest)
		p := "child " + m.Digest.String()
		if m.Platform != nil {
			p = "platform " + m.Platform.String() + " (" + m.Digest.String() + ")"
		}
		what = append(what, p)
	}
	return digests, what
}

// judge completes out with the verdict of e on the signatures of
// digests (what names each in a finding): the first that fails for
// another reason than having no signature decides (untrusted, identity,
// a registry failure); otherwise an unsigned one makes the image
// unsigned, with NoSignature only when none of digests is signed (an
// index signed in part is no unsigned image); otherwise it is verified.
func (v *Verifier) judge(out model.Verification, e *entry, repo name.Repository, digests []v1.Hash, what []string, src images) model.Verification {
	at := func(i int, found string) string {
		if what[i] == "" {
			return found
		}
		return what[i] + ": " + found
	}
	var found []string
	unsigned := -1
	var unsignedRes result
	for i, d := range digests {
		res := v.verifyDigest(e, repo, d, src)
		switch {
		case res.status == model.VerifyVerified:
			found = append(found, res.found)
		case res.none:
			if unsigned < 0 {
				unsigned, unsignedRes = i, res
			}
		default:
			out.Status, out.Found, out.Err = res.status, at(i, res.found), res.err
			return out
		}
	}
	switch {
	case unsigned >= 0 && len(found) == 0:
		out.Status, out.Found, out.NoSignature = model.VerifyUnsigned, at(unsigned, unsignedRes.found), true
		return out
	case unsigned >= 0:
		out.Status = model.VerifyUnsigned
		out.Found = at(unsigned, unsignedRes.found) + fmt.Sprintf(" (signed: %d of the %d platforms; index: children wants every one signed)", len(found), len(digests))
		return out
	}
	out.Status, out.Found = model.VerifyVerified, strings.Join(unique(found), "; ")
	if strings.Contains(out.Found, "bundle") {
		out.Signature = "bundle"
	} else {
		out.Signature = "sig-tag"
	}
	return out
}

// result is the verdict for one digest.
type result struct {
	status string
	found  string
	// none is true when no signature at all was found, and nothing kept
	// one from being read.
	none bool
	// err is the registry failure that kept the signatures from being
	// read (the verdict is then unsigned for want of an answer).
	err error
}

// registryError is a registry failure met while a signature was read:
// no verdict on the signature.
type registryError struct{ err error }

func (r *registryError) Error() string { return registryReason(r.err) }
func (r *registryError) Unwrap() error { return r.err }

// verifyDigest checks the signatures of repo@d with e, once per run.
func (v *Verifier) verifyDigest(e *entry, repo name.Repository, d v1.Hash, src images) result {
	key := fmt.Sprintf("%p|%s@%s", e, repo.Name(), d)
	v.mu.Lock()
	c, ok := v.cache[key]
	if !ok {
		c = &cached{}
		v.cache[key] = c
	}
	v.mu.Unlock()
	c.once.Do(func() { c.res = e.check(repo, d, src) })
	return c.res
}

// check looks for bundles and .sig tags of repo@d and verifies each until
// one passes. The verdict, when none does: a registry failure (unsigned
// with err) when the registry kept the referrers, a bundle or the .sig
// tag from being read; identity when a keyless signature verified but
// named someone else; untrusted when any signature was found; unsigned
// with none when none was.
func (e *entry) check(repo name.Repository, d v1.Hash, src images) result {
	var identityErr, untrusted []string
	var readErr string
	var readFailure error
	digestBytes, _ := hex.DecodeString(d.Hex)

	// Sigstore bundles attached as referrers.
	im, err := src.referrers(repo.Digest(d.String()))
	if err != nil && !isNotFound(err) {
		readErr, readFailure = "referrers: "+registryReason(err), err
	}
	if err == nil {
		for _, m := range im.Manifests {
			if m.Annotations[sign.BundlePredicateTypeAnnotation] == model.SummaryPredicateType {
				continue // a verification summary, no signature
			}
			switch m.ArtifactType {
			case BundleArtifactType:
			case "", emptyMediaType:
				// A registry that derives artifactType from the config
				// media type only (go-containerregistry's own): the
				// layer says.
			default:
				continue
			}
			b, err := readBundle(repo, m.Digest, src)
			if errors.Is(err, errNotBundle) {
				continue
			}
			var re *registryError
			if errors.As(err, &re) {
				if readFailure == nil {
					readErr, readFailure = "bundle "+short(m.Digest)+": "+re.Error(), re.err
				}
				continue
			}
			if err != nil {
				untrusted = append(untrusted, "bundle "+m.Digest.String()+": "+err.Error())
				continue
			}
			found, idErr, err := e.verifyBundle(b, digestBytes)
			switch {
			case errors.Is(err, errSummary):
				// Not a signature: as if it were not there.
			case err == nil:
				return result{status: model.VerifyVerified, found: found + " (bundle " + short(m.Digest) + ")"}
			case idErr:
				identityErr = append(identityErr, found)
			default:
				untrusted = append(untrusted, "bundle "+short(m.Digest)+": "+err.Error())
			}
		}
	}

	// Legacy cosign .sig tags.
	sigTag := repo.Tag(d.Algorithm + "-" + d.Hex + ".sig")
	img, err := src.image(sigTag)
	if err != nil && !isNotFound(err) && readErr == "" {
		readErr, readFailure = sigTag.TagStr()+": "+registryReason(err), err
	}
	if err == nil {
		n, found, idErr, err := e.verifySigTag(img, d)
		var re *registryError
		switch {
		case err == nil && n > 0:
			return result{status: model.VerifyVerified, found: found + " (" + sigTag.TagStr() + ")"}
		case errors.As(err, &re):
			if readFailure == nil {
				readErr, readFailure = sigTag.TagStr()+": "+re.Error(), re.err
			}
		case idErr:
			identityErr = append(identityErr, found)
		case err != nil:
			untrusted = append(untrusted, sigTag.TagStr()+": "+err.Error())
		}
	}

	// A signature the registry kept from being read may be the one that
	// verifies: no verdict, whatever else was found.
	switch {
	case readFailure != nil:
		return result{status: model.VerifyUnsigned, found: "signatures could not be read: " + readErr, err: readFailure}
	case len(identityErr) > 0:
		return result{status: model.VerifyIdentity, found: "signed by " + strings.Join(unique(identityErr), "; ")}
	case len(untrusted) > 0:
		return result{status: model.VerifyUntrusted, found: strings.Join(untrusted, "; ")}
	}
	return result{status: model.VerifyUnsigned, none: true, found: "no signature: no Sigstore bundle referrer and no " + sigTag.TagStr() + " tag"}
}

// readBundle reads the Sigstore bundle of the referrer manifest dg.
// Errors: errNotBundle for another kind of referrer, *registryError when
// the registry did not give the manifest or the layer, others for a
// bundle that does not parse.
func readBundle(repo name.Repository, dg v1.Hash, src images) (*sgbundle.Bundle, error) {
	img, err := src.image(repo.Digest(dg.String()))
	if err != nil {
		return nil, &registryError{err}
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, errors.New(registryReason(err))
	}
	if len(m.Layers) == 0 || !strings.HasPrefix(string(m.Layers[0].MediaType), "application/vnd.dev.sigstore.bundle") {
		return nil, errNotBundle
	}
	layers, err := img.Layers()
	if err != nil || len(layers) == 0 {
		return nil, fmt.Errorf("no bundle layer")
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		return nil, &registryError{err}
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxBundle))
	if err != nil {
		return nil, &registryError{err}
	}
	var b sgbundle.Bundle
	if err := b.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	return &b, nil
}

// verifyBundle verifies b as a signature of the image digest. found
// describes the signer (the certificate identity, or "key"); idErr is true
// when the signature verified but the identity did not match.
func (e *entry) verifyBundle(b *sgbundle.Bundle, digest []byte) (found string, idErr bool, err error) {
	var pol sgverify.PolicyBuilder
	if e.identity != nil {
		pol = sgverify.NewPolicy(sgverify.WithArtifactDigest("sha256", digest), sgverify.WithCertificateIdentity(*e.identity))
	} else {
		pol = sgverify.NewPolicy(sgverify.WithArtifactDigest("sha256", digest), sgverify.WithKey())
	}
	res, err := e.bundleV.Verify(b, pol)
	if err == nil && res.Statement != nil && res.Statement.GetPredicateType() == model.SummaryPredicateType {
		// A verification summary (its referrer lost the predicate type
		// annotation) says what a verifier concluded; it signs nothing.
		return "", false, errSummary
	}
	if err == nil {
		if e.identity != nil {
			return bundleIdentity(b), false, nil
		}
		return "key", false, nil
	}
	var mismatch *sgverify.ErrNoMatchingCertificateIdentity
	if errors.As(err, &mismatch) {
		return bundleIdentity(b), true, err
	}
	if why := outsideValidity(b); why != "" {
		return "", false, fmt.Errorf("%s: %w", why, err)
	}
	if e.identity == nil {
		if vc, verr := b.VerificationContent(); verr == nil && vc.Certificate() != nil {
			return "", false, fmt.Errorf("a keyless signature (%s), the policy wants a key", bundleIdentity(b))
		}
	}
	return "", false, err
}

// outsideValidity says, for a keyless bundle whose certificate was not
// valid at a time the transparency log recorded the signature or a
// timestamp authority stamped it (RFC 3161), when it was valid and that
// time ("" otherwise): sigstore-go reports only that no log entry, or the
// leaf certificate, verified.
func outsideValidity(b *sgbundle.Bundle) string {
	vc, err := b.VerificationContent()
	if err != nil || vc.Certificate() == nil {
		return ""
	}
	c := vc.Certificate()
	entries, err := b.TlogEntries()
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if at := e.IntegratedTime(); at.Before(c.NotBefore) || at.After(c.NotAfter) {
			return fmt.Sprintf("the certificate was valid from %s to %s, not when the transparency log recorded the signature (%s)",
				c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
		}
	}
	// The RFC 3161 timestamps: sigstore-go checks the certificate at each
	// one it verified and says only that the leaf failed.
	stamps, err := b.Timestamps()
	if err != nil {
		return ""
	}
	for _, raw := range stamps {
		ts, err := timestamp.ParseResponse(raw)
		if err != nil {
			continue
		}
		if at := ts.Time; at.Before(c.NotBefore) || at.After(c.NotAfter) {
			return fmt.Sprintf("the certificate was valid from %s to %s, not when the timestamp authority stamped the signature (%s)",
				c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
		}
	}
	return ""
}

// bundleIdentity names the identity of b's certificate: "issuer X,
// subject Y"; "key" for a key signature.
func bundleIdentity(b *sgbundle.Bundle) string {
	vc, err := b.VerificationContent()
	if err != nil || vc.Certificate() == nil {
		return "key"
	}
	s, err := certificate.SummarizeCertificate(vc.Certificate())
	if err != nil {
		return "an unreadable certificate"
	}
	return fmt.Sprintf("issuer %s, subject %s", s.Issuer, s.SubjectAlternativeName)
}
