package main

import (
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
)

// A key given as base64 (a CI secret) is read as the key, and an unusable
// value is never echoed as a file name.
func TestKeyMaterialNeverEchoesAKey(t *testing.T) {
	pem := "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIK4n\n-----END PRIVATE KEY-----\n"
	b64 := base64.StdEncoding.EncodeToString([]byte(pem))
	got, err := keyMaterial("signing-key", b64)
	if err != nil || string(got) != pem {
		t.Fatalf("base64 of a PEM key: %q, %v", got, err)
	}
	// The base64 of something that is no PEM block: not a key, not a file.
	secret := base64.StdEncoding.EncodeToString([]byte("an OpenSSH key without its armor, say, 0123456789"))
	for _, flag := range []string{"signing-key", "cosign-key", "catalog-ssh-key"} {
		_, err := keyMaterial(flag, secret)
		if err == nil {
			t.Fatalf("--%s: no error", flag)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), secret[:12]) {
			t.Errorf("--%s: the value is in the error: %v", flag, err)
		}
		if !strings.Contains(err.Error(), "--"+flag) {
			t.Errorf("--%s: the flag is not named: %v", flag, err)
		}
		if keySecret(secret) != secret {
			t.Errorf("--%s: the value is not masked", flag)
		}
	}
	// A file name is named, and not masked.
	missing := filepath.Join(t.TempDir(), "missing-key.pem")
	if _, err := keyMaterial("signing-key", missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	if keySecret(missing) != "" {
		t.Errorf("a file name is masked")
	}
}
