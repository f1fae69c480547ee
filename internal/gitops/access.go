package gitops

import (
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// This file exports what internal/catalog needs of Options (its defaults,
// endpoint, credentials and --catalog-path check) without changing how the
// rest of this package uses them.

// WithDefaults returns o with the defaults applied: branch main, the bot
// identity for author and committer, a 5-minute timeout.
func (o Options) WithDefaults() Options {
	o.defaults()
	return o
}

// Endpoint returns the URL go-git should use for o.URL: the URL itself, or
// the absolute path of a local catalog. Errors: no --catalog, or a local
// path that does not exist (*UnreachableError).
func (o Options) Endpoint() (string, error) { return o.endpoint() }

// AuthMethod returns the transport credentials for o.URL (HTTP basic auth,
// SSH key or agent with the host key checked), nil for none. Errors:
// *AuthError naming the flag to fix.
func (o Options) AuthMethod() (transport.AuthMethod, error) { return o.auth() }

// CleanPath checks and cleans --catalog-path: "" for the repo root, else a
// slash-separated relative path inside the repo (no "..", not .git).
func CleanPath(p string) (string, error) { return cleanPath(p) }

// IsLocal reports whether the catalog URL u is a local path (not http(s),
// ssh or scp-like).
func IsLocal(u string) bool { return !isSSH(u) && !strings.Contains(u, "://") }

// IsNoBranch reports whether err (from a clone) says that the remote has no
// such branch.
func IsNoBranch(err error) bool { return isNoBranch(err) }
