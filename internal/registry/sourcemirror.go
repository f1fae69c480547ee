package registry

import (
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// SourceMirror says where the images below a prefix are read: From and
// To are registry[/path] prefixes (quay.io/acme, mirror.corp:5000/quay),
// and an image whose registry and repository path are From or below it
// (on a path boundary) is read from To with the rest of its path, its tag
// or digest unchanged. The reference itself (in the manifests, the
// records, the rendered catalog and the destination mapping) keeps From:
// only the reads move, as for a central registry that holds vetted copies
// of the sources.
type SourceMirror struct {
	From, To string
}

// String is FROM=TO, as the flag takes it.
func (m SourceMirror) String() string { return m.From + "=" + m.To }

// ParseSourceMirror parses FROM=TO (--source-mirror) and checks both
// sides (SourceMirror.Check). Errors say what is wrong and what is wanted.
func ParseSourceMirror(s string) (SourceMirror, error) {
	from, to, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok {
		return SourceMirror{}, fmt.Errorf("%q: want FROM=TO, registry[/path] prefixes such as quay.io/acme=mirror.corp:5000/quay/acme", s)
	}
	m := SourceMirror{From: from, To: to}
	return m, m.Check()
}

// Check checks that From and To are registry[/path] prefixes: a valid
// registry host[:port] and, when given, a repository path, with no
// scheme, tag or digest. Errors name the side that is wrong.
func (m SourceMirror) Check() error {
	for _, side := range []struct{ what, v string }{{"from", m.From}, {"to", m.To}} {
		if _, _, err := splitPrefix(side.v); err != nil {
			return fmt.Errorf("%s %q: %v: want registry[/path], e.g. quay.io/acme or mirror.corp:5000/quay", side.what, side.v, err)
		}
	}
	return nil
}

// splitPrefix splits a registry[/path] prefix into the registry as
// go-containerregistry names it (docker.io is index.docker.io) and the
// path ("" for a whole registry).
func splitPrefix(p string) (string, string, error) {
	if p == "" {
		return "", "", fmt.Errorf("empty")
	}
	if strings.Contains(p, "://") || strings.ContainsAny(p, "@ ") {
		return "", "", fmt.Errorf("not a prefix")
	}
	host, path, _ := strings.Cut(strings.TrimSuffix(p, "/"), "/")
	if !ValidHost(host) {
		return "", "", fmt.Errorf("%q is not a registry host[:port]", host)
	}
	reg, err := name.NewRegistry(host)
	if err != nil {
		return "", "", err
	}
	if path != "" && (!ValidPath(path) || strings.Contains(path, ":")) {
		return "", "", fmt.Errorf("%q is not a repository path (lowercase letters, digits, '.', '_', '-', '/'; no tag)", path)
	}
	return reg.RegistryStr(), path, nil
}

// sourceMirrors are the rewrites of a client, longest From first.
type sourceMirrors []sourceMirror

type sourceMirror struct {
	fromReg, fromPath string
	to                string // registry[/path] as given, no trailing slash
}

// newSourceMirrors checks ms and orders them longest From first. Errors
// name the mirror that is wrong.
func newSourceMirrors(ms []SourceMirror) (sourceMirrors, error) {
	var out sourceMirrors
	for _, m := range ms {
		if err := m.Check(); err != nil {
			return nil, fmt.Errorf("source mirror %s: %w", m, err)
		}
		reg, path, _ := splitPrefix(m.From)
		out = append(out, sourceMirror{fromReg: reg, fromPath: path, to: strings.TrimSuffix(m.To, "/")})
	}
	sort.SliceStable(out, func(i, j int) bool {
		return len(out[i].fromReg)+len(out[i].fromPath) > len(out[j].fromReg)+len(out[j].fromPath)
	})
	return out, nil
}

// rewrite returns the reference r is read from: the first (longest)
// mirror whose From is r's registry and a prefix of its repository path on
// a path boundary gives its To with the rest of the path and r's tag or
// digest; ok is false when none matches (r is read where it is).
func (ms sourceMirrors) rewrite(r name.Reference) (string, bool) {
	reg, path := r.Context().RegistryStr(), r.Context().RepositoryStr()
	for _, m := range ms {
		if reg != m.fromReg {
			continue
		}
		rest := path
		if m.fromPath != "" {
			var ok bool
			if rest, ok = strings.CutPrefix(path, m.fromPath); !ok || (rest != "" && rest[0] != '/') {
				continue
			}
			rest = strings.TrimPrefix(rest, "/")
		}
		out := m.to
		if rest != "" {
			out += "/" + rest
		}
		switch r := r.(type) {
		case name.Digest:
			out += "@" + r.DigestStr()
		case name.Tag:
			out += ":" + r.TagStr()
		}
		return out, true
	}
	return "", false
}

// ReadReference parses ref (ParseReference) and returns where it is read
// from: through the client's source mirrors (Options.SourceMirrors), else
// ref itself. Every read of a source image goes through it: bundle reads,
// lint's image checks, signature verification, sizing, the copy and the
// archive. Errors: those of ParseReference, for ref or for the rewritten
// reference (naming both).
func (c *Client) ReadReference(ref string) (name.Reference, error) {
	r, err := c.ParseReference(ref)
	if err != nil || len(c.mirrors) == 0 {
		return r, err
	}
	to, ok := c.mirrors.rewrite(r)
	if !ok {
		return r, nil
	}
	rr, err := c.ParseReference(to)
	if err != nil {
		return nil, fmt.Errorf("%s read from the source mirror as %s: %w", ref, to, err)
	}
	return rr, nil
}

// ReadRef is ReadReference as a string, for the readers that take one
// (bundle.Fetch, signature verification): ref itself when it does not
// parse (the reader then reports it) or no mirror matches.
func (c *Client) ReadRef(ref string) string {
	if len(c.mirrors) == 0 {
		return ref
	}
	r, err := c.ReadReference(ref)
	if err != nil {
		return ref
	}
	return r.String()
}
