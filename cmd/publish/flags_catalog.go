package main

import (
	"os"
	"strings"
	"text/template"

	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/pipeline"
	"github.com/spf13/pflag"
)

// catalogFlags are the catalog Git repo and how to reach it: --catalog,
// --catalog-branch, --catalog-path, HTTPS credentials
// (--catalog-username, --catalog-password) and SSH (--catalog-ssh-key,
// --catalog-ssh-key-password, --catalog-known-hosts,
// --insecure-ignore-host-key). run, plan and push --catalog.
type catalogFlags struct {
	url, branch, username, password string
	path                            string
	sshKey, sshKeyPass, knownHosts  string
	insecureIgnoreHostKey           bool
	createBranch, initCatalog       bool
	// readOnly, set before register, leaves out --create-branch and
	// --init-catalog (publish package only reads the catalog).
	readOnly bool
}

// register adds the flags; access says what the credentials need ("push"
// for run, "read" for plan); what is --catalog's usage.
func (c *catalogFlags) register(fs *pflag.FlagSet, access, what string) {
	fs.StringVar(&c.url, "catalog", "", what)
	fs.StringVar(&c.branch, "catalog-branch", "main", "catalog branch")
	fs.StringVar(&c.path, "catalog-path", "", "directory of the catalog inside the catalog repo (default: its root); the catalog may live in the package repo")
	fs.StringVar(&c.username, "catalog-username", "", "user name for an HTTPS catalog repo")
	fs.StringVar(&c.password, "catalog-password", "", "password or token for an HTTPS catalog repo ("+access+" access)")
	fs.StringVar(&c.sshKey, "catalog-ssh-key", "", "private key for an SSH catalog URL: a file, or the key itself (default: the SSH agent)")
	fs.StringVar(&c.sshKeyPass, "catalog-ssh-key-password", "", "passphrase of an encrypted --catalog-ssh-key")
	fs.StringVar(&c.knownHosts, "catalog-known-hosts", "", "known_hosts file with the SSH catalog server's host key (default: $SSH_KNOWN_HOSTS, ~/.ssh/known_hosts)")
	fs.BoolVar(&c.insecureIgnoreHostKey, "insecure-ignore-host-key", false, "do not check the SSH catalog server's host key (only on a trusted network)")
	if c.readOnly {
		// A command that only reads the catalog, or pushes a branch of its
		// own (prune --pull-request), makes no catalog branch and seeds no
		// template.
		secret(fs, "catalog-password", "catalog-ssh-key-password")
		secretKey(fs, "catalog-ssh-key")
		return
	}
	fs.BoolVar(&c.createBranch, "create-branch", false, "create --catalog-branch when the catalog repo has other branches but not this one (default: refuse, naming the branches it has)")
	fs.BoolVar(&c.initCatalog, "init-catalog", false, "seed the catalog template into a repo (or --catalog-path) that holds files but no catalog state (publish/state/) (default: refuse, it is not a catalog)")
	secret(fs, "catalog-password", "catalog-ssh-key-password")
	secretKey(fs, "catalog-ssh-key")
}

// options returns the catalog options (the CA of tls for an HTTPS URL).
// Errors are usage errors naming the flag; a key's content is never
// printed.
func (c *catalogFlags) options(tls *tlsFlags) (gitops.Options, error) {
	o := gitops.Options{URL: c.url, Branch: c.branch, Username: c.username, Password: c.password, Path: c.path}
	if c.sshKey != "" {
		key, err := keyMaterial("catalog-ssh-key", c.sshKey)
		if err != nil {
			return o, err
		}
		o.SSHKey, o.SSHKeyPassphrase = key, c.sshKeyPass
	}
	o.KnownHostsFile, o.InsecureIgnoreHostKey = c.knownHosts, c.insecureIgnoreHostKey
	o.CreateBranch, o.InitCatalog = c.createBranch, c.initCatalog
	pem, err := tls.catalogCA(c.url)
	if err != nil {
		return o, err
	}
	o.CABundle = pem
	return o, nil
}

// require fails without --catalog.
func (c *catalogFlags) require() error {
	if c.url == "" {
		return usagef("--catalog URL|PATH is required (the catalog Git repo)")
	}
	return nil
}

// commitFlags are who commits to the catalog, how the commit is signed and
// what its message says: --commit-author-name, --commit-author-email,
// --commit-committer-name, --commit-committer-email, --signing-key,
// --signing-key-password, --commit-message-template. run and push only:
// plan never commits.
type commitFlags struct {
	authorName, authorEmail       string
	committerName, committerEmail string
	signingKey, signingKeyPass    string
	messageTemplate               string
}

func (g *commitFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&g.authorName, "commit-author-name", gitops.DefaultAuthorName, "author name of catalog commits")
	fs.StringVar(&g.authorEmail, "commit-author-email", gitops.DefaultAuthorEmail, "author email of catalog commits")
	fs.StringVar(&g.committerName, "commit-committer-name", "", "committer name of catalog commits (default: the author)")
	fs.StringVar(&g.committerEmail, "commit-committer-email", "", "committer email of catalog commits (default: the author)")
	fs.StringVar(&g.signingKey, "signing-key", "", "sign catalog commits with this key: a file, or the key itself, armored OpenPGP (gpg --export-secret-keys --armor) or OpenSSH private key")
	fs.StringVar(&g.signingKeyPass, "signing-key-password", "", "passphrase of an encrypted --signing-key")
	fs.StringVar(&g.messageTemplate, "commit-message-template", "", "Go template of the catalog commit message, or a file holding one (fields: .Subject .Changes .Listed .Upgraded .Relisted .Delisted .Updated .SourceCommit .SourceRepo); Source-Commit/Source-Repo trailers are added when missing")
	secret(fs, "signing-key-password")
	secretKey(fs, "signing-key")
}

// apply sets the identity and signer of o and returns the commit message
// template (nil: the default message). Errors are usage errors (exit 2)
// naming the flag; a key's content is never printed.
func (g *commitFlags) apply(o *gitops.Options) (*template.Template, error) {
	var tmpl *template.Template
	if t := g.messageTemplate; t != "" {
		if !strings.Contains(t, "{{") {
			data, err := os.ReadFile(t)
			if err != nil {
				return nil, usagef("--commit-message-template: %w (a Go template such as '{{.Subject}}', or a file holding one)", err)
			}
			t = string(data)
		}
		var err error
		if tmpl, err = pipeline.ParseCommitTemplate(t); err != nil {
			return nil, usagef("--commit-message-template: %w", err)
		}
	}
	o.AuthorName, o.AuthorEmail = g.authorName, g.authorEmail
	o.CommitterName, o.CommitterEmail = g.committerName, g.committerEmail
	if g.signingKey != "" {
		key, err := keyMaterial("signing-key", g.signingKey)
		if err != nil {
			return nil, err
		}
		if o.Signer, err = gitops.NewSigner(key, g.signingKeyPass); err != nil {
			return nil, usagef("--signing-key: %w", err)
		}
	}
	return tmpl, nil
}
