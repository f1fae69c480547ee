package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/spf13/pflag"
)

// gitFlags are the catalog commit and transport flags run and plan share:
// where the catalog lives in its repo, who commits, how commits are signed,
// and the SSH key and host key check.
type gitFlags struct {
	path                           string
	authorName, authorEmail        string
	committerName, committerEmail  string
	signingKey, signingKeyPass     string
	sshKey, sshKeyPass, knownHosts string
	insecureIgnoreHostKey          bool
	messageTemplate                string
}

func (g *gitFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&g.path, "catalog-path", "", "directory of the catalog inside the catalog repo (default: its root); the catalog may live in the package repo")
	fs.StringVar(&g.authorName, "commit-author-name", gitops.DefaultAuthorName, "author name of catalog commits")
	fs.StringVar(&g.authorEmail, "commit-author-email", gitops.DefaultAuthorEmail, "author email of catalog commits")
	fs.StringVar(&g.committerName, "commit-committer-name", "", "committer name of catalog commits (default: the author)")
	fs.StringVar(&g.committerEmail, "commit-committer-email", "", "committer email of catalog commits (default: the author)")
	fs.StringVar(&g.signingKey, "signing-key", "", "sign catalog commits with this key: a file, or the key itself, armored OpenPGP (gpg --export-secret-keys --armor) or OpenSSH private key")
	fs.StringVar(&g.signingKeyPass, "signing-key-password", "", "passphrase of an encrypted --signing-key")
	fs.StringVar(&g.sshKey, "catalog-ssh-key", "", "private key for an SSH catalog URL: a file, or the key itself (default: the SSH agent)")
	fs.StringVar(&g.sshKeyPass, "catalog-ssh-key-password", "", "passphrase of an encrypted --catalog-ssh-key")
	fs.StringVar(&g.knownHosts, "catalog-known-hosts", "", "known_hosts file with the SSH catalog server's host key (default: $SSH_KNOWN_HOSTS, ~/.ssh/known_hosts)")
	fs.StringVar(&g.messageTemplate, "commit-message-template", "", "Go template of the catalog commit message, or a file holding one (fields: .Subject .Changes .Listed .Upgraded .Relisted .Delisted .Updated .SourceCommit .SourceRepo); Source-Commit/Source-Repo trailers are added when missing")
	fs.BoolVar(&g.insecureIgnoreHostKey, "insecure-ignore-host-key", false, "do not check the SSH catalog server's host key (only on a trusted network)")
}

// keyMaterial is a key given as a flag: its content when it looks like a
// PEM or armored block (a CI secret), else the file it names.
func keyMaterial(flag, v string) ([]byte, error) {
	if strings.Contains(v, "-----BEGIN ") {
		return []byte(v), nil
	}
	data, err := os.ReadFile(v)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--%s: %w", flag, err)}
	}
	return data, nil
}

// apply fills the catalog options of p. Errors are usage errors (exit 2)
// naming the flag; a key's content is never printed.
func (g *gitFlags) apply(p *pipeline.Options) error {
	if t := g.messageTemplate; t != "" {
		if !strings.Contains(t, "{{") {
			data, err := os.ReadFile(t)
			if err != nil {
				return &usageError{fmt.Errorf("--commit-message-template: %w (a Go template such as '{{.Subject}}', or a file holding one)", err)}
			}
			t = string(data)
		}
		tmpl, err := pipeline.ParseCommitTemplate(t)
		if err != nil {
			return &usageError{fmt.Errorf("--commit-message-template: %w", err)}
		}
		p.CommitTemplate = tmpl
	}
	o := &p.Catalog
	o.Path = g.path
	o.AuthorName, o.AuthorEmail = g.authorName, g.authorEmail
	o.CommitterName, o.CommitterEmail = g.committerName, g.committerEmail
	if g.signingKey != "" {
		key, err := keyMaterial("signing-key", g.signingKey)
		if err != nil {
			return err
		}
		if o.Signer, err = gitops.NewSigner(key, g.signingKeyPass); err != nil {
			return &usageError{fmt.Errorf("--signing-key: %w", err)}
		}
	}
	if g.sshKey != "" {
		key, err := keyMaterial("catalog-ssh-key", g.sshKey)
		if err != nil {
			return err
		}
		o.SSHKey, o.SSHKeyPassphrase = key, g.sshKeyPass
	}
	o.KnownHostsFile, o.InsecureIgnoreHostKey = g.knownHosts, g.insecureIgnoreHostKey
	return nil
}
