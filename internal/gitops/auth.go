package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	redactpkg "github.com/operator-publish/publish/internal/redact"
)

// isSSH reports whether u is an SSH URL: ssh://[user@]host[:port]/path or
// the scp-like [user@]host:path that git accepts.
func isSSH(u string) bool {
	if strings.HasPrefix(u, "ssh://") || strings.HasPrefix(u, "git+ssh://") {
		return true
	}
	if strings.Contains(u, "://") {
		return false
	}
	// scp-like: a colon before the first slash, and not a Windows drive.
	colon, slash := strings.Index(u, ":"), strings.Index(u, "/")
	return colon > 1 && (slash < 0 || colon < slash)
}

// sshUser is the user name of an SSH URL (default "git", as GitHub, GitLab
// and Gitea expect).
func sshUser(u string) string {
	if strings.Contains(u, "://") {
		if p, err := url.Parse(u); err == nil && p.User != nil && p.User.Username() != "" {
			return p.User.Username()
		}
		return "git"
	}
	if at := strings.Index(u, "@"); at > 0 && at < strings.Index(u, ":") {
		return u[:at]
	}
	return "git"
}

// plainHTTPCredentials refuses credentials (the flags', or a URL's user
// information) for an http:// catalog URL on another host than this
// machine: they would cross the network in clear.
func (o *Options) plainHTTPCredentials() error {
	u, err := url.Parse(o.URL)
	if err != nil || !strings.EqualFold(u.Scheme, "http") || redactpkg.LoopbackHost(u.Host) {
		return nil
	}
	if o.Username != "" || o.Password != "" || u.User != nil {
		return &AuthError{Err: fmt.Errorf("catalog repo %s: plain http:// to a host that is not this machine: the catalog credentials would cross the network in clear; use https:// (plain HTTP carries credentials to localhost only)", redactpkg.URL(o.URL))}
	}
	return nil
}

// auth returns the transport credentials for the catalog URL: HTTP basic
// auth (a token alone is the password), or for an SSH URL the private key
// SSHKey (else the SSH agent) with the host key checked against
// KnownHostsFile (else $SSH_KNOWN_HOSTS, ~/.ssh/known_hosts,
// /etc/ssh/ssh_known_hosts), unchecked only with InsecureIgnoreHostKey.
// Nil: no credentials (a local path, an anonymous HTTP clone).
func (o *Options) auth() (transport.AuthMethod, error) {
	if !isSSH(o.URL) {
		if err := o.plainHTTPCredentials(); err != nil {
			return nil, err
		}
		if o.Username != "" || o.Password != "" {
			user := o.Username
			if user == "" {
				user = "x-access-token" // a token alone: GitHub, GitLab and Gitea accept any user name
			}
			return &githttp.BasicAuth{Username: user, Password: o.Password}, nil
		}
		return nil, nil
	}
	user := sshUser(o.URL)
	helper := gitssh.HostKeyCallbackHelper{}
	switch {
	case o.InsecureIgnoreHostKey:
		helper.HostKeyCallback = ssh.InsecureIgnoreHostKey()
	default:
		var files []string
		if o.KnownHostsFile != "" {
			if _, err := os.Stat(o.KnownHostsFile); err != nil {
				return nil, &AuthError{Err: fmt.Errorf("--catalog-known-hosts %s: %w", o.KnownHostsFile, err)}
			}
			files = []string{o.KnownHostsFile}
		}
		db, err := gitssh.NewKnownHostsDb(files...)
		if err != nil {
			return nil, &AuthError{Err: fmt.Errorf("no known_hosts file to check the catalog server's host key (%v): pass --catalog-known-hosts FILE (ssh-keyscan -p PORT HOST > FILE, then check the fingerprint), set SSH_KNOWN_HOSTS, or, only on a trusted network, --insecure-ignore-host-key", err)}
		}
		helper.HostKeyCallback = db.HostKeyCallback()
		helper.HostKeyAlgorithms = db.HostKeyAlgorithms(sshHostPort(o.URL))
	}
	if len(o.SSHKey) == 0 {
		a, err := gitssh.NewSSHAgentAuth(user)
		if err != nil {
			return nil, &AuthError{Err: fmt.Errorf("SSH catalog URL without --catalog-ssh-key, and no SSH agent: %w", err)}
		}
		a.HostKeyCallbackHelper = helper
		return a, nil
	}
	keys, err := gitssh.NewPublicKeys(user, o.SSHKey, o.SSHKeyPassphrase)
	if err != nil {
		return nil, &AuthError{Err: fmt.Errorf("--catalog-ssh-key: %w (an OpenSSH or PEM private key; set --catalog-ssh-key-password when it is encrypted)", err)}
	}
	keys.HostKeyCallbackHelper = helper
	return keys, nil
}

// sshHostPort is "host:port" of an SSH URL, as known_hosts lookups want it.
func sshHostPort(u string) string {
	if ep, err := transport.NewEndpoint(u); err == nil {
		port := ep.Port
		if port == 0 {
			port = 22
		}
		return fmt.Sprintf("%s:%d", ep.Host, port)
	}
	return u
}

// AuthError is a credential or key that cannot be used as given (a
// usage error: fix the flag it names).
type AuthError struct{ Err error }

func (e *AuthError) Error() string { return "catalog credentials: " + e.Err.Error() }
func (e *AuthError) Unwrap() error { return e.Err }

// NewSigner returns the commit signer for an armored OpenPGP private key
// ("-----BEGIN PGP PRIVATE KEY BLOCK-----", as `gpg --export-secret-keys
// --armor` writes it) or an OpenSSH private key ("-----BEGIN OPENSSH
// PRIVATE KEY-----", as ssh-keygen writes it). passphrase decrypts an
// encrypted key. OpenPGP signatures are those of `git commit -S`; SSH
// signatures follow OpenSSH's PROTOCOL.sshsig with namespace "git" and
// SHA-512, those of `git commit -S` with gpg.format=ssh, so `git verify-commit`
// (with gpg.ssh.allowedSignersFile) checks them. Errors name what is wrong
// with the key, never its content.
func NewSigner(key []byte, passphrase string) (git.Signer, error) {
	switch {
	case bytes.Contains(key, []byte("-----BEGIN PGP PRIVATE KEY BLOCK-----")):
		return newPGPSigner(key, passphrase)
	case bytes.Contains(key, []byte("PRIVATE KEY-----")):
		return newSSHSigner(key, passphrase)
	}
	return nil, errors.New("not an armored OpenPGP private key nor an OpenSSH private key")
}

// pgpSigner makes an armored detached OpenPGP signature.
type pgpSigner struct{ entity *openpgp.Entity }

func newPGPSigner(key []byte, passphrase string) (*pgpSigner, error) {
	list, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(key))
	if err != nil {
		return nil, fmt.Errorf("reading the OpenPGP key: %w", err)
	}
	if len(list) == 0 || list[0].PrivateKey == nil {
		return nil, errors.New("the OpenPGP key block holds no private key")
	}
	e := list[0]
	if e.PrivateKey.Encrypted {
		if passphrase == "" {
			return nil, errors.New("the OpenPGP key is encrypted: set the signing key password")
		}
		if err := e.DecryptPrivateKeys([]byte(passphrase)); err != nil {
			return nil, fmt.Errorf("decrypting the OpenPGP key: %w", err)
		}
	}
	return &pgpSigner{entity: e}, nil
}

// Sign implements git.Signer.
func (s *pgpSigner) Sign(message io.Reader) ([]byte, error) {
	var b bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&b, s.entity, message, nil); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sshSigner makes an armored SSH signature (PROTOCOL.sshsig, namespace git).
type sshSigner struct{ signer ssh.Signer }

func newSSHSigner(key []byte, passphrase string) (*sshSigner, error) {
	s, err := ssh.ParsePrivateKey(key)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if passphrase == "" {
			return nil, errors.New("the SSH key is encrypted: set the signing key password")
		}
		s, err = ssh.ParsePrivateKeyWithPassphrase(key, []byte(passphrase))
	}
	if err != nil {
		return nil, fmt.Errorf("reading the SSH key: %w", err)
	}
	return &sshSigner{signer: s}, nil
}

// Sign implements git.Signer.
func (s *sshSigner) Sign(message io.Reader) ([]byte, error) {
	sig, err := sshsig.Sign(message, s.signer, sshsig.HashSHA512, "git")
	if err != nil {
		return nil, err
	}
	return sshsig.Armor(sig), nil
}

// RetryEarlyClose runs fetch (a go-git clone or fetch), and once more when
// it failed only with go-git v5's "closing input: EOF". That error is no
// failure of the server: after the client's last pkt-line ("done") the
// server sends the pack and ends the SSH session, and when that happens
// before go-git closes its side of the session's input (a busy machine),
// golang.org/x/crypto/ssh refuses the close with io.EOF and go-git drops
// the pack it was about to read (go-git v6 ignores that EOF; v5.19.3,
// the newest v5, does not). The second attempt is a whole new session; any
// other error is returned as it is.
func RetryEarlyClose(fetch func() error) error {
	err := fetch()
	if err != nil && strings.Contains(err.Error(), "closing input: EOF") {
		err = fetch()
	}
	return err
}
