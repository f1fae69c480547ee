package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/gitops"
	"golang.org/x/crypto/ssh"
)

// TestCommitAndCatalogFlags: a signing key as a file or as the key itself
// (a CI secret), identities, and usage errors that name the flag and never
// print the key.
func TestCommitAndCatalogFlags(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	b, _ := ssh.MarshalPrivateKey(priv, "")
	key := string(pem.EncodeToMemory(b))
	file := filepath.Join(t.TempDir(), "key")
	os.WriteFile(file, []byte(key), 0o600)

	for _, v := range []string{file, key} {
		g := commitFlags{signingKey: v, authorName: "Bot", authorEmail: "bot@example.com", committerName: "CI"}
		c := catalogFlags{url: "x", path: "catalog", sshKey: v}
		o, err := c.options(&tlsFlags{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.apply(&o); err != nil {
			t.Fatal(err)
		}
		if o.Signer == nil || o.AuthorName != "Bot" || o.CommitterName != "CI" || o.Path != "catalog" || string(o.SSHKey) != key {
			t.Errorf("%+v", o)
		}
	}
	secret := "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-really-a-key-SECRET\n-----END OPENSSH PRIVATE KEY-----\n"
	for flag, g := range map[string]commitFlags{
		"--signing-key":             {signingKey: secret},
		"--commit-message-template": {messageTemplate: "{{.NoSuchField}}"},
	} {
		_, err := g.apply(&gitops.Options{})
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: %v, want a usage error naming the flag", flag, err)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("the error prints the key: %v", err)
		}
	}
	_, err := (&catalogFlags{sshKey: filepath.Join(t.TempDir(), "missing")}).options(&tlsFlags{})
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--catalog-ssh-key") {
		t.Errorf("--catalog-ssh-key: %v, want a usage error naming the flag", err)
	}
	// --ca-file reaches an HTTPS catalog only.
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, []byte("PEM"), 0o644)
	for url, want := range map[string]string{"https://git.example.com/c.git": "PEM", "/local/c.git": ""} {
		o, err := (&catalogFlags{url: url}).options(&tlsFlags{caFile: ca})
		if err != nil || string(o.CABundle) != want {
			t.Errorf("%s: CA %q %v, want %q", url, o.CABundle, err, want)
		}
	}
}
