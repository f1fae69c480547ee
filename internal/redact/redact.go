// Package redact keeps credentials out of where they must not go: out of
// text before it is printed (the user information of URLs,
// https://TOKEN@host and https://user:pass@host, and the secrets to mask
// in a CI log), and off plain HTTP except to this machine (LoopbackHost). net/url's URL.Redacted hides only a
// password, so that a token given as the user name (the usual form of a
// GitHub or GitLab token in a clone URL) would still be printed; here the
// whole user part goes.
package redact

import (
	"net"
	"net/url"
	"strings"
)

// LoopbackHost reports whether host (host, host:port or [ipv6]:port) is
// this machine: "localhost" or a loopback address. A credential may
// cross plain HTTP to such a host only: nothing else sees the bytes.
func LoopbackHost(host string) bool {
	h := host
	if sh, _, err := net.SplitHostPort(host); err == nil {
		h = sh
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// URL returns u without the user information of its authority:
// "https://TOKEN@host/x" and "https://u:p@host/x" become "https://host/x".
// Anything that is not a URL with "://" (a path, an scp-like
// git@host:x) is returned unchanged. u need not parse: the authority is
// cut at the first "/", "?", "#", white space or quote.
func URL(u string) string { return Text(u) }

// Text returns s with the user information of every "scheme://" URL in it
// dropped (see URL): for error messages and log lines that may quote a
// URL, a Git error among them.
func Text(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+3])
		s = s[i+3:]
		end := strings.IndexAny(s, "/?#\"'`<> \t\r\n")
		if end < 0 {
			end = len(s)
		}
		if at := strings.LastIndex(s[:end], "@"); at >= 0 {
			s = s[at+1:]
		}
	}
}

// Secrets returns what of u's user information is a secret, to mask in a
// CI log: the password of an http(s) URL, and a user name given without a
// password that is long enough to be a token (8 characters or more; a
// short user name such as "git" would mask every occurrence of the word).
// nil for anything else.
func Secrets(u string) []string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil || (p.Scheme != "https" && p.Scheme != "http") {
		return nil
	}
	if pass, ok := p.User.Password(); ok {
		if pass == "" {
			return nil
		}
		return []string{pass}
	}
	if user := p.User.Username(); len(user) >= 8 {
		return []string{user}
	}
	return nil
}
