package registry

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// The tag and digest parts of the distribution reference grammar
// (github.com/distribution/reference, reference.go).
var (
	tagGrammar    = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestGrammar = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$`)
)

// maxNameLength is the distribution grammar's limit on host and path.
const maxNameLength = 255

// CheckReference checks ref, an image reference as a manifest, a command
// line or an archive's index gives it ([HOST[:PORT]/]PATH[:TAG][@DIGEST]),
// against the distribution reference grammar, which go-containerregistry
// checks only character by character: every path component must match
// [a-z0-9]+((.|_|__|-+)[a-z0-9]+)*, so that "", "." and ".." (which a
// path-normalising proxy in front of a registry would resolve, taking the
// reference out of the destination prefix) are refused; the host is
// DOMAIN[:PORT] or [IPV6][:PORT] with a port in 1-65535; the tag and digest
// follow the grammar. The error names the part that is wrong.
func CheckReference(ref string) error {
	rest, digest, hasDigest := strings.Cut(ref, "@")
	if hasDigest && !digestGrammar.MatchString(digest) {
		return fmt.Errorf("digest %q is not ALGORITHM:HEX", digest)
	}
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		if err := CheckTag(rest[i+1:]); err != nil {
			return err
		}
		rest = rest[:i]
	}
	if rest == "" {
		return fmt.Errorf("no repository")
	}
	if len(rest) > maxNameLength {
		return fmt.Errorf("name is longer than %d characters", maxNameLength)
	}
	repo := rest
	if i := strings.Index(rest, "/"); i >= 0 {
		first := rest[:i]
		// The first component is a host when it has a '.' or a ':' or is
		// localhost (the grammar's rule, as docker's).
		if strings.ContainsAny(first, ".:") || first == "localhost" || strings.HasPrefix(first, "[") {
			if !ValidHost(first) {
				return fmt.Errorf("registry %q is not DOMAIN[:PORT] (port 1-65535)", first)
			}
			repo = rest[i+1:]
		}
	}
	for _, c := range strings.Split(repo, "/") {
		if !pathComponent.MatchString(c) {
			switch c {
			case "":
				return fmt.Errorf("repository %q has an empty path component", repo)
			case ".", "..":
				return fmt.Errorf("repository %q has a %q path component: a registry or proxy would resolve it outside the repository named", repo, c)
			}
			return fmt.Errorf("repository %q: path component %q is not lowercase letters and digits separated by '.', '_', '__' or '-'", repo, c)
		}
	}
	return nil
}

// ParseStrict parses ref with go-containerregistry's strict validation (a
// tag or digest is required) after CheckReference. opts are further naming
// options (name.Insecure, say). Errors say what is wrong with ref.
func ParseStrict(ref string, opts ...name.Option) (name.Reference, error) {
	if err := CheckReference(ref); err != nil {
		return nil, err
	}
	return name.ParseReference(ref, append([]name.Option{name.StrictValidation}, opts...)...)
}

// CheckTag checks a tag alone against the distribution grammar
// ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}).
func CheckTag(tag string) error {
	if !tagGrammar.MatchString(tag) {
		return fmt.Errorf("tag %q is not valid (letters, digits, '_', '.', '-', at most 128, not starting with '.' or '-')", tag)
	}
	return nil
}
