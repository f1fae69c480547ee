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

	"github.com/operator-publish/publish/internal/pipeline"
	"golang.org/x/crypto/ssh"
)

// TestGitFlags: a signing key as a file or as the key itself (a CI
// secret), identities, and usage errors that name the flag and never print
// the key.
func TestGitFlags(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	b, _ := ssh.MarshalPrivateKey(priv, "")
	key := string(pem.EncodeToMemory(b))
	file := filepath.Join(t.TempDir(), "key")
	os.WriteFile(file, []byte(key), 0o600)

	for _, v := range []string{file, key} {
		g := gitFlags{signingKey: v, authorName: "Bot", authorEmail: "bot@example.com", committerName: "CI", path: "catalog"}
		var p pipeline.Options
		if err := g.apply(&p); err != nil {
			t.Fatal(err)
		}
		o := p.Catalog
		if o.Signer == nil || o.AuthorName != "Bot" || o.CommitterName != "CI" || o.Path != "catalog" {
			t.Errorf("%+v", o)
		}
	}
	secret := "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-really-a-key-SECRET\n-----END OPENSSH PRIVATE KEY-----\n"
	for flag, g := range map[string]gitFlags{
		"--signing-key":             {signingKey: secret},
		"--catalog-ssh-key":         {sshKey: filepath.Join(t.TempDir(), "missing")},
		"--commit-message-template": {messageTemplate: "{{.NoSuchField}}"},
	} {
		err := g.apply(&pipeline.Options{})
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: %v, want a usage error naming the flag", flag, err)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("the error prints the key: %v", err)
		}
	}
}
