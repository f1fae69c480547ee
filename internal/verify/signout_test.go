package verify

import (
	"context"
	"crypto/elliptic"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// cosignKey is a key pair in cosign generate-key-pair's format: the
// private key encrypted with pass ("ENCRYPTED SIGSTORE PRIVATE KEY").
func cosignKey(t *testing.T, pass string) (priv, pub []byte) {
	t.Helper()
	priv, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte(pass)))
	if err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// TestSignOut: what internal/sign writes, publish's own
// verifier accepts. An image signed on go-containerregistry's registry
// (referrers API) and on Debian's docker-registry (the tag schema) verifies
// through its Sigstore bundle referrer under a key policy, and its .sig
// tag verifies on its own; a file's digest bundle verifies, and fails
// with one flipped byte of the digest or another key. Keys in cosign's
// encrypted format load with their passphrase only.
func TestSignOut(t *testing.T) {
	privPEM, pubPEM := cosignKey(t, "s3cret")
	for _, tc := range []struct {
		name, pass, want string
		data             []byte
	}{
		{"no passphrase", "", "the key is encrypted: give its passphrase", privPEM},
		{"wrong passphrase", "guess", "does not decrypt with the passphrase", privPEM},
		{"not PEM", "", "not a PEM private key", []byte("hello")},
		{"damaged", "", "the private key does not parse", []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")},
	} {
		_, err := sign.LoadKey(tc.data, []byte(tc.pass), "key.pem", "--cosign-key-password")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "key.pem: ") || strings.Contains(err.Error(), tc.pass+"\x00") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	key, err := sign.LoadKey(privPEM, []byte("s3cret"), "key.pem", "--cosign-key-password")
	if err != nil {
		t.Fatal(err)
	}
	if string(key.PublicKeyPEM()) != string(pubPEM) {
		t.Errorf("public key:\n%s\nwant\n%s", key.PublicKeyPEM(), pubPEM)
	}

	for _, reg := range []struct {
		name string
		new  func(*testing.T) testRegistry
	}{{"in-process", inProcessRegistry}, {"docker-registry", debianRegistry}} {
		t.Run(reg.name, func(t *testing.T) {
			r := reg.new(t)
			ctx := context.Background()
			v, _ := loadPolicy(t, "verify:\n- match: "+r.host+"/ours/**\n  key: ours.pub\n", map[string]string{"ours.pub": string(pubPEM)})
			ref := r.host + "/ours/catalog:v1"
			d := pushRandom(t, ref, r.opts)
			repo, _ := name.NewRepository(r.host + "/ours/catalog")
			desc, err := remote.Head(repo.Digest(d.String()), r.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Verify(ctx, ref, r.opts); got.Status != model.VerifyUnsigned {
				t.Fatalf("before signing: %+v", got)
			}
			sig, err := key.SignImage(ctx, repo, *desc, true, r.opts)
			if err != nil {
				t.Fatal(err)
			}
			v, _ = loadPolicy(t, "verify:\n- match: "+r.host+"/ours/**\n  key: ours.pub\n", map[string]string{"ours.pub": string(pubPEM)})
			if got := v.Verify(ctx, ref, r.opts); got.Status != model.VerifyVerified || got.Signature != "bundle" {
				t.Errorf("signed: %+v", got)
			}
			// The .sig tag on its own.
			img, err := remote.Image(repo.Tag(sig.SigTag), r.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if n, _, _, err := v.entries[0].verifySigTag(img, d); n != 1 || err != nil {
				t.Errorf(".sig tag: %d signatures, %v", n, err)
			}
		})
	}

	sum := sha256.Sum256([]byte("an archive"))
	b, err := key.SignDigest(sum[:])
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyDigestBundle(b, sum[:], pubPEM); err != nil {
		t.Errorf("digest bundle: %v", err)
	}
	flipped := sum
	flipped[7] ^= 1
	if err := VerifyDigestBundle(b, flipped[:], pubPEM); err == nil || !strings.Contains(err.Error(), "does not verify with this key") {
		t.Errorf("flipped digest: %v", err)
	}
	_, otherPub := cosignKey(t, "x")
	if err := VerifyDigestBundle(b, sum[:], otherPub); err == nil {
		t.Error("another key verified the bundle")
	}
}
