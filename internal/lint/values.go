package lint

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"unicode"
)

// MaxIconBytes is the largest decoded spec.info.icon accepted: what
// MaxIconSize bytes of base64 text decode to.
const MaxIconBytes = MaxIconSize / 4 * 3

// checkIcon returns why s is not base64 of a PNG, SVG, JPEG or GIF image of
// at most MaxIconBytes, or "".
func checkIcon(s string) string {
	t := strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
	if strings.HasPrefix(strings.ToLower(t), "data:") {
		return "is a data: URL: write only the base64 text (what follows \"base64,\")"
	}
	if len(t) > base64.StdEncoding.EncodedLen(MaxIconBytes)+4 {
		return fmt.Sprintf("is about %s once decoded, more than the %s limit", sizeText(len(t)*3/4), sizeText(MaxIconBytes))
	}
	b, err := base64.StdEncoding.DecodeString(t)
	if err != nil {
		var err2 error
		if b, err2 = base64.RawStdEncoding.DecodeString(t); err2 != nil {
			if _, err3 := base64.URLEncoding.DecodeString(t); err3 == nil {
				return "is URL-safe base64 (with - and _): use standard base64 (base64 -w0 icon.png)"
			}
			return fmt.Sprintf("is not valid base64: %v", err)
		}
	}
	if len(b) > MaxIconBytes {
		return fmt.Sprintf("is %d bytes once decoded, more than the %s limit", len(b), sizeText(MaxIconBytes))
	}
	if len(b) == 0 {
		return "decodes to nothing"
	}
	if iconType(b) == "" {
		return "is not a PNG, SVG, JPEG or GIF image (the decoded bytes start with " + fmt.Sprintf("%q", clip(string(b[:min(len(b), 12)]), 12)) + ")"
	}
	return ""
}

// iconType sniffs the image type of b: "png", "jpeg", "gif", "svg" or "".
func iconType(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}):
		return "jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")) || bytes.HasPrefix(b, []byte("GIF89a")):
		return "gif"
	}
	t := bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	t = bytes.TrimLeft(t, " \t\r\n")
	head := t[:min(len(t), 4096)]
	lower := bytes.ToLower(head)
	if (bytes.HasPrefix(lower, []byte("<?xml")) || bytes.HasPrefix(lower, []byte("<svg")) ||
		bytes.HasPrefix(lower, []byte("<!--")) || bytes.HasPrefix(lower, []byte("<!doctype svg"))) &&
		bytes.Contains(lower, []byte("<svg")) {
		return "svg"
	}
	return ""
}

// checkURL returns why u is not an absolute http(s) URL, or "".
func checkURL(u string) string {
	if strings.TrimSpace(u) == "" {
		return "is empty"
	}
	if strings.ContainsAny(u, " \t\r\n") {
		return fmt.Sprintf("%q contains spaces", u)
	}
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Sprintf("%q is not a valid URL: %v", u, err)
	}
	if (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Sprintf("%q is not an absolute http(s) URL", u)
	}
	return ""
}

// boolLike reports whether s is what an unquoted YAML 1.1 boolean (yes, no,
// on, off, true, false, ...) becomes once loaded: "true" or "false".
func boolLike(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "false", "yes", "no", "on", "off", "y", "n":
		return true
	}
	return false
}
