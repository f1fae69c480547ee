package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/operator-publish/publish/internal/scratch"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/sign"
	"github.com/operator-publish/publish/internal/verify"
	"github.com/spf13/pflag"
)

// signFlags sign what a command produces with a cosign key
// (docs/signatures.md "Sign what goes out"): --cosign-key,
// --cosign-key-password, --cosign-sig-tag. run and push sign the OCI
// catalog (--oci); package signs the archive.
type signFlags struct {
	key, pass string
	sigTag    bool
}

func (f *signFlags) register(fs *pflag.FlagSet, what string) {
	fs.StringVar(&f.key, "cosign-key", "", "sign "+what+" with this private key: a file, or the key itself (PEM: PKCS#8, or cosign generate-key-pair's encrypted key)")
	fs.StringVar(&f.pass, "cosign-key-password", "", "passphrase of an encrypted --cosign-key")
	fs.BoolVar(&f.sigTag, "cosign-sig-tag", false, "also write the legacy cosign signature tag (sha256-<hex>.sig) beside the Sigstore bundle referrer, for verifiers older than cosign v2.4")
	secret(fs, "cosign-key-password")
	secretKey(fs, "cosign-key")
}

// load returns the key, nil without --cosign-key. Errors are usage errors
// naming the flags; they never contain the key or the passphrase.
func (f *signFlags) load() (*sign.Key, error) {
	if f.key == "" {
		return nil, nil // a passphrase alone (a CI-wide secret) is unused
	}
	data, err := keyMaterial("cosign-key", f.key)
	if err != nil {
		return nil, err
	}
	where := keyWhere("cosign-key", f.key)
	k, err := sign.LoadKey(data, []byte(f.pass), where, "--cosign-key-password or PUBLISH_COSIGN_KEY_PASSWORD")
	if err != nil {
		return nil, &usageError{err}
	}
	return k, nil
}

// signer is the pipeline's image signer, nil without a key.
func (f *signFlags) signer() (*sign.ImageSigner, error) {
	k, err := f.load()
	if err != nil || k == nil {
		return nil, err
	}
	return &sign.ImageSigner{Key: k, SigTag: f.sigTag}, nil
}

// signArchive writes the Sigstore bundle of the archive at path (its
// SHA-256, hex sum) beside it: path + ".sigstore.json", through a
// temporary file. On failure nothing is left beside the archive.
func signArchive(k *sign.Key, path, sum string) (string, error) {
	digest, err := hexDigest(sum)
	if err != nil {
		return "", err
	}
	b, err := k.SignDigest(digest)
	if err != nil {
		return "", fmt.Errorf("signing %s (--cosign-key): %w", path, err)
	}
	out := path + sign.BundleFileSuffix
	if err := scratch.WriteFile(out, b, 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", out, err)
	}
	return out, nil
}

// signFile writes the Sigstore bundle of the file at path beside it
// (signArchive over the SHA-256 of its content): a part's --shard-result.
func signFile(k *sign.Key, path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return signArchive(k, path, hex.EncodeToString(sum[:]))
}

// archiveKey is --key of verify and push: the public key an archive's
// signature (FILE.tgz.sigstore.json) must verify with.
type archiveKey struct{ key string }

func (a *archiveKey) register(fs *pflag.FlagSet) {
	fs.StringVar(&a.key, "key", "", "check the archive's signature (FILE.tgz.sigstore.json, from publish package --cosign-key) with this public key: a file, or the key itself (PEM)")
}

// check verifies the archive's signature when --key was given; it returns
// the archive's SHA-256 ("" without --key). A split archive (its
// NAME.parts.json or directory) has its index and every part checked.
func (a *archiveKey) check(path string) (string, error) {
	if a.key == "" {
		return "", nil
	}
	pub, err := keyMaterial("key", a.key)
	if err != nil {
		return "", err
	}
	idx, split, err := archive.SplitIndex(path)
	if err != nil || !split {
		if err != nil {
			return "", err
		}
		return verify.VerifyFile(path, pub)
	}
	sum, err := verify.VerifyFile(idx, pub)
	if err != nil {
		return "", err
	}
	parts, err := archive.ReadParts(idx)
	if err != nil {
		return "", err
	}
	for _, p := range parts.Parts {
		if _, err := verify.VerifyFile(filepath.Join(filepath.Dir(idx), p.Name), pub); err != nil {
			return "", err
		}
	}
	return sum, nil
}

// signParts signs the index of a split archive and each of its parts
// (signArchive over the sums the index lists); it returns the index's
// signature.
func signParts(k *sign.Key, index string, parts []archive.Part) (string, error) {
	for _, p := range parts {
		if _, err := signArchive(k, filepath.Join(filepath.Dir(index), p.Name), p.SHA256); err != nil {
			return "", err
		}
	}
	return signFile(k, index)
}

// hexDigest decodes a SHA-256 sum in hex.
func hexDigest(sum string) ([]byte, error) {
	d, err := hex.DecodeString(sum)
	if err != nil || len(d) != 32 {
		return nil, fmt.Errorf("not a SHA-256 sum: %q", sum)
	}
	return d, nil
}

// checkRead verifies the signatures of the archive verify read (res):
// of the file, or of a split archive's index and of each part, against
// the sums read.
func (a *archiveKey) checkRead(path string, res *archive.VerifyResult) error {
	if res.Index == "" {
		return a.checkSum(path, res.SHA256)
	}
	if err := a.checkSum(res.Index, res.SHA256); err != nil {
		return err
	}
	for _, p := range res.Parts {
		if err := a.checkSum(filepath.Join(filepath.Dir(res.Index), p.Name), p.SHA256); err != nil {
			return err
		}
	}
	return nil
}

// checkSum verifies the archive's signature against its SHA-256 (hex),
// computed already by the caller (publish verify reads the whole file).
func (a *archiveKey) checkSum(path, sum string) error {
	pub, err := keyMaterial("key", a.key)
	if err != nil {
		return err
	}
	digest, err := hexDigest(sum)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path + sign.BundleFileSuffix)
	if err != nil {
		return fmt.Errorf("%s: no signature to check with --key: %w", path, err)
	}
	if err := verify.VerifyDigestBundle(b, digest, pub); err != nil {
		return fmt.Errorf("%s (signature %s): %w", path, path+sign.BundleFileSuffix, err)
	}
	return nil
}

// trustFlags read the trust material an archive carries (trust/: the
// verify policy's keys and trusted roots): --valid-until is the date by
// which its certificates must still be valid.
type trustFlags struct{ validUntil string }

func (f *trustFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.validUntil, "valid-until", "", "warn when a certificate or key of a trusted root in the archive (trust/) stops being valid before this date: YYYY-MM-DD or RFC 3339 (default: 30 days from now)")
}

// until is --valid-until, or now plus 30 days. Errors are usage errors.
func (f *trustFlags) until(now time.Time) (time.Time, error) {
	if f.validUntil == "" {
		return now.Add(30 * 24 * time.Hour), nil
	}
	for _, layout := range []string{"2006-01-02", time.RFC3339} {
		if t, err := time.Parse(layout, f.validUntil); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usagef("--valid-until %q: write a date, YYYY-MM-DD, or an RFC 3339 time", f.validUntil)
}

// check reads the trust material files (CheckTrust) at now: what it holds
// and the warnings for what expires before --valid-until.
func (f *trustFlags) check(files []archive.File, now time.Time) (*verify.TrustReport, error) {
	until, err := f.until(now)
	if err != nil {
		return nil, err
	}
	return verify.CheckTrust(files, now, until)
}

// pushTrust is pipeline.PushOptions.Trust: the verifier of the archive's
// trust material, read in a scratch directory, and its warnings.
func (f *trustFlags) pushTrust(tempDir string) func(files []archive.File) (pipeline.ImageVerifier, []string, error) {
	return func(files []archive.File) (pipeline.ImageVerifier, []string, error) {
		rep, err := f.check(files, time.Now())
		if err != nil {
			return nil, nil, err
		}
		v, err := archiveVerifier(files, tempDir)
		if err != nil || v == nil {
			return nil, rep.Expiring, err
		}
		return v, rep.Expiring, nil
	}
}

// archiveVerifier is verify.FromTrust of an archive's trust material,
// read in a scratch directory under tempDir ("": the system's) that is
// removed before it returns. Nil without rules.
func archiveVerifier(files []archive.File, tempDir string) (*verify.Verifier, error) {
	dir, err := scratch.MkdirTemp(tempDir, "archive-trust")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return verify.FromTrust(files, dir)
}
