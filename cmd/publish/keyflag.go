package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// keyMaterial is a key given as a flag (--signing-key, --cosign-key,
// --catalog-ssh-key, --key): the key itself when the value is a PEM or
// armored block, or the base64 of one (how CI secrets often hold keys),
// else the content of the file it names. Errors are usage errors naming
// the flag; they show the value only when it reads as a file name (see
// keyWhere), never a key.
func keyMaterial(flag, v string) ([]byte, error) {
	if isPEM(v) {
		return []byte(v), nil
	}
	if key, ok := base64Key(v); ok {
		return key, nil
	}
	data, err := os.ReadFile(v)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &usageError{fmt.Errorf("%s: %w (give a key file, or the key itself: a PEM or armored block, or its base64)", keyWhere(flag, v), err)}
	}
	return data, nil
}

// isPEM reports whether a key flag holds the key itself, not a file name.
func isPEM(v string) bool { return strings.Contains(v, "-----BEGIN ") }

// base64Key decodes v when it is the base64 (standard or URL alphabet,
// line breaks allowed) of a PEM or armored block.
func base64Key(v string) ([]byte, bool) {
	s := strings.Join(strings.Fields(v), "")
	if len(s) < 16 {
		return nil, false
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && isPEM(string(b)) {
			return b, true
		}
	}
	return nil, false
}

// keyWhere names a key flag in a message: "--flag FILE" when the value
// reads as a file name, else "--flag" alone with the value's length, so
// that a key in a form not recognised (base64 of a binary key, a key
// without its armor) is never printed.
func keyWhere(flag, v string) string {
	if isPEM(v) {
		return "--" + flag
	}
	if looksLikeFileName(v) {
		return "--" + flag + " " + v
	}
	return fmt.Sprintf("--%s (a value of %d characters, not shown: not a key, and no such file)", flag, len(v))
}

// looksLikeFileName reports whether v can be printed as a file name: an
// existing file, or a short value with a character that base64 and hex
// never hold (".", "-", "_", "~", a space) and no line break.
func looksLikeFileName(v string) bool {
	if fi, err := os.Stat(v); err == nil && !fi.IsDir() {
		return true
	}
	return len(v) <= 128 && strings.ContainsAny(v, ".-_~ ") && !strings.ContainsAny(v, "\r\n")
}

// keySecret is the value of a key flag to mask in the CI log: the value
// unless it names a file.
func keySecret(v string) string {
	if v == "" || (!isPEM(v) && looksLikeFileName(v)) {
		return ""
	}
	return v
}
