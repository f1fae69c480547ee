package registry

import (
	"net"
	"regexp"
	"strconv"
	"strings"
)

// The grammar of the distribution reference
// (github.com/distribution/reference): go-containerregistry checks only the
// characters, so that "a//b", "-a" or "host:1:2" would pass and fail later,
// image by image, at the registry.
var (
	domainComponent = regexp.MustCompile(`^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])$`)
	pathComponent   = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$`)
)

// ValidHost reports whether h is DOMAIN[:PORT] or [IPV6][:PORT].
func ValidHost(h string) bool {
	host, port := h, ""
	if strings.HasPrefix(h, "[") {
		end := strings.Index(h, "]")
		if end < 0 {
			return false
		}
		host, port = h[1:end], strings.TrimPrefix(h[end+1:], ":")
		if h[end+1:] != "" && !strings.HasPrefix(h[end+1:], ":") {
			return false
		}
		if ip := net.ParseIP(host); ip == nil || ip.To4() != nil {
			return false
		}
	} else {
		if i := strings.LastIndex(h, ":"); i >= 0 {
			host, port = h[:i], h[i+1:]
			if port == "" {
				return false
			}
		}
		if host == "" {
			return false
		}
		for _, c := range strings.Split(host, ".") {
			if !domainComponent.MatchString(c) {
				return false
			}
		}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return false
		}
	}
	return true
}

// ValidPath reports whether p is a repository path: components separated
// by single slashes.
func ValidPath(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if !pathComponent.MatchString(c) {
			return false
		}
	}
	return true
}
