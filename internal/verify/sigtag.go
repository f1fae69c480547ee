package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// simpleSigning is the part of a cosign simple-signing payload checked
// here: the digest it signs.
type simpleSigning struct {
	Critical struct {
		Image struct {
			Digest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
}

// verifySigTag checks the layers of a .sig image: n is how many
// signatures it holds; err is nil when one verifies with the key and signs
// d, a *registryError when none does and the registry kept the manifest
// or a signed payload from being read.
func (e *entry) verifySigTag(img v1.Image, d v1.Hash) (n int, found string, idErr bool, err error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, "", false, &registryError{err}
	}
	var errs, ids []string
	var regErr error
	for _, l := range m.Layers {
		sigB64, ok := l.Annotations[SignatureAnnotation]
		if !ok {
			continue
		}
		n++
		_, keyless := l.Annotations[CertificateAnnotation]
		switch {
		case e.keyVer == nil && !keyless:
			errs = append(errs, "a key signature, the policy wants a keyless identity")
			continue
		case e.keyVer != nil && keyless:
			errs = append(errs, "a keyless signature, the policy wants a key")
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(sigB64)
		if err != nil {
			errs = append(errs, "signature annotation is not base64")
			continue
		}
		layer, err := img.LayerByDigest(l.Digest)
		if err != nil {
			errs = append(errs, registryReason(err))
			continue
		}
		payload, err := readAll(layer)
		if err != nil {
			if regErr == nil {
				regErr = &registryError{err}
			}
			continue
		}
		who := "key"
		if keyless {
			id, isID, err := e.verifyKeylessSigTag(l.Annotations, payload, sig)
			if isID {
				ids = append(ids, id)
				continue
			}
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			who = id
		} else if err := e.keyVer.VerifySignature(bytes.NewReader(sig), bytes.NewReader(payload)); err != nil {
			errs = append(errs, "the signature does not verify with the policy's key")
			continue
		}
		var ss simpleSigning
		if err := json.Unmarshal(payload, &ss); err != nil {
			errs = append(errs, "the signed payload is not a simple-signing payload")
			continue
		}
		if ss.Critical.Image.Digest != d.String() {
			errs = append(errs, fmt.Sprintf("the signature is for %s, not this image (%s)", ss.Critical.Image.Digest, d))
			continue
		}
		return n, who, false, nil
	}
	if n == 0 {
		return 0, "", false, nil
	}
	if regErr != nil {
		return n, "", false, regErr
	}
	if len(ids) > 0 && len(errs) == 0 {
		return n, strings.Join(unique(ids), "; "), true, errors.New("another identity")
	}
	return n, "", false, errors.New(strings.Join(unique(errs), "; "))
}

func readAll(l v1.Layer) ([]byte, error) {
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, maxBundle))
}

func isNotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == 404
}

// registryReason shortens a registry error to its message (no URL with
// credentials: go-containerregistry redacts them already).
func registryReason(err error) string {
	var te *transport.Error
	if errors.As(err, &te) {
		if len(te.Errors) > 0 {
			return fmt.Sprintf("%s (HTTP %d)", te.Errors[0].Message, te.StatusCode)
		}
		return fmt.Sprintf("HTTP %d", te.StatusCode)
	}
	return err.Error()
}

func short(h v1.Hash) string {
	if len(h.Hex) > 12 {
		return h.Algorithm + ":" + h.Hex[:12]
	}
	return h.String()
}

func unique(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// VerifyFile checks the Sigstore bundle beside path (path +
// ".sigstore.json", as publish package --cosign-key writes it) against
// the SHA-256 of the file, with the PEM public key keyPEM, offline. It
// reads the whole file once and returns its SHA-256 (hex). Errors name
// the file: no bundle beside it, a bundle that does not parse, a
// signature that does not verify.
func VerifyFile(path string, keyPEM []byte) (string, error) {
	bundlePath := path + ".sigstore.json"
	b, err := os.ReadFile(bundlePath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%s: no signature beside it (%s): sign it with publish package --cosign-key, or carry the bundle with it", path, bundlePath)
		}
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	sum := h.Sum(nil)
	if err := VerifyDigestBundle(b, sum, keyPEM); err != nil {
		return "", fmt.Errorf("%s (signature %s): %w", path, bundlePath, err)
	}
	return hex.EncodeToString(sum), nil
}
