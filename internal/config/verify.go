package config

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v4"
)

// Verification modes of a VerifyEntry (docs/signatures.md).
const (
	// VerifyEnforce: an image the entry matches that is not signed as the
	// entry says is a lint error; nothing is mirrored or committed.
	VerifyEnforce = "enforce"
	// VerifyIfSigned: an image with no signature at all is accepted (and
	// reported unsigned); an image whose signatures do not verify, or that
	// does not exist, is a lint error as under enforce. A registry failure
	// is neither: the run stops with it.
	VerifyIfSigned = "if-signed"
	// VerifyWarn: the failures of enforce are lint warnings.
	VerifyWarn = "warn"
	// VerifyOff: the images the entry matches are not verified (an
	// exception before a broader entry).
	VerifyOff = "off"
)

// What an image index needs (VerifyEntry.Index).
const (
	// IndexOwn: the index's own signature suffices (the default).
	IndexOwn = "own"
	// IndexChildren: every platform child of the index must be signed; the
	// index's own signature is not needed.
	IndexChildren = "children"
)

// VerifyEntry is one entry of publish.yaml verify: which images it covers
// (Match), how strictly (Mode), and what counts as signed: a cosign public
// key (Key) or a keyless identity (Keyless) checked against a trusted root
// (TrustedRoot). The first entry whose pattern matches an image decides;
// an image no entry matches is not verified. The signatures themselves
// are checked by internal/verify.
type VerifyEntry struct {
	// Match is a pattern on the image's registry/repository (no tag or
	// digest): "*" matches within one path segment, "**" across segments,
	// "?" one character; e.g. quay.io/vendor/** or registry.example.com/*/operator.
	Match string `yaml:"match"`
	// Mode is enforce (default), if-signed, warn or off.
	Mode string `yaml:"mode,omitempty"`
	// Key is a cosign public key: a PEM block written inline, or a file
	// (relative to publish.yaml).
	Key string `yaml:"key,omitempty"`
	// Keyless is the identity a Fulcio certificate must carry.
	Keyless *Keyless `yaml:"keyless,omitempty"`
	// TrustedRoot is a Sigstore trusted root JSON file (relative to
	// publish.yaml; `cosign trusted-root create` writes one): the Fulcio
	// CAs, transparency logs and timestamp authorities to trust, so that
	// keyless verification works offline. Required with Keyless.
	TrustedRoot string `yaml:"trustedRoot,omitempty"`
	// Index is own (default: an image index's own signature suffices) or
	// children (every platform child must be signed).
	Index string `yaml:"index,omitempty"`

	// Line is the 1-based publish.yaml line of the entry; Lines the lines
	// of its fields, by field name.
	Line  int            `yaml:"-"`
	Lines map[string]int `yaml:"-"`
	// KeyPEM is the public key read from Key (inline or from the file);
	// TrustedRootJSON the content of TrustedRoot.
	KeyPEM          []byte `yaml:"-"`
	TrustedRootJSON []byte `yaml:"-"`
	// Pattern is Match compiled.
	Pattern *regexp.Regexp `yaml:"-"`
}

// Keyless is the identity of a keyless (Fulcio) signature: the OIDC issuer
// and the certificate subject (SAN: an email or a URI such as a workflow),
// each exact or as a regular expression (Go syntax, matched in full).
type Keyless struct {
	Issuer        string `yaml:"issuer,omitempty" json:"issuer,omitempty"`
	IssuerRegexp  string `yaml:"issuerRegexp,omitempty" json:"issuerRegexp,omitempty"`
	Subject       string `yaml:"subject,omitempty" json:"subject,omitempty"`
	SubjectRegexp string `yaml:"subjectRegexp,omitempty" json:"subjectRegexp,omitempty"`
}

// String describes the identity as the lint messages show it.
func (k *Keyless) String() string {
	if k == nil {
		return ""
	}
	iss, sub := k.Issuer, k.Subject
	if iss == "" {
		iss = "~" + k.IssuerRegexp
	}
	if sub == "" {
		sub = "~" + k.SubjectRegexp
	}
	return fmt.Sprintf("issuer %s, subject %s", iss, sub)
}

// MatchRepository reports whether the entry covers an image of repo
// ("registry/repository", as go-containerregistry names it).
func (e *VerifyEntry) MatchRepository(repo string) bool {
	return e.Pattern != nil && e.Pattern.MatchString(repo)
}

// compileGlob turns a Match pattern into an anchored regular expression.
func compileGlob(p string) (*regexp.Regexp, error) {
	if p == "" {
		return nil, fmt.Errorf("match is empty: write a registry/repository pattern such as quay.io/vendor/**")
	}
	if strings.ContainsAny(p, "@ \t") || strings.Contains(p, "://") {
		return nil, fmt.Errorf("match %q: write registry/repository without scheme, tag or digest", p)
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*':
			if i+1 < len(p) && p[i+1] == '*' {
				b.WriteString(".*")
				i++
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// loadVerify checks the verify section of the file at path (data is its
// content) and fills the derived fields: the key is parsed (a PKIX public
// key in PEM), the trusted root read and checked to be JSON (internal/verify
// parses it further, with the same line), the regular expressions compiled.
func loadVerify(path string, data []byte, es []VerifyEntry) error {
	lines := verifyLines(data)
	dir := filepath.Dir(path)
	for i := range es {
		e := &es[i]
		if i < len(lines) {
			e.Line, e.Lines = lines[i].line, lines[i].fields
		}
		at := func(field string) int {
			if l := e.Lines[field]; l > 0 {
				return l
			}
			return e.Line
		}
		fail := func(field, format string, args ...any) error {
			return &Error{Path: path, Line: at(field), Msg: fmt.Sprintf("verify[%d]: ", i) + fmt.Sprintf(format, args...)}
		}
		re, err := compileGlob(e.Match)
		if err != nil {
			return fail("match", "%v", err)
		}
		e.Pattern = re
		switch e.Mode {
		case "":
			e.Mode = VerifyEnforce
		case VerifyEnforce, VerifyIfSigned, VerifyWarn, VerifyOff:
		default:
			return fail("mode", "mode %q: write enforce (every image signed), if-signed (a signature, when there is one, must verify), warn or off", e.Mode)
		}
		switch e.Index {
		case "":
			e.Index = IndexOwn
		case IndexOwn, IndexChildren:
		default:
			return fail("index", "index %q: write own (the index's signature suffices) or children (every platform child must be signed)", e.Index)
		}
		if e.Mode == VerifyOff {
			continue
		}
		switch {
		case e.Key == "" && e.Keyless == nil:
			return fail("match", "no key and no keyless identity: say what counts as signed with key: (a cosign public key, PEM or file) or keyless: (issuer and subject) and trustedRoot:")
		case e.Key != "" && e.Keyless != nil:
			return fail("key", "both key and keyless: write one entry for each")
		case e.Key != "":
			pemData := []byte(e.Key)
			if !strings.Contains(e.Key, "-----BEGIN") {
				p := e.Key
				if !filepath.IsAbs(p) {
					p = filepath.Join(dir, p)
				}
				pemData, err = os.ReadFile(p)
				if err != nil {
					return fail("key", "key: %v (a path relative to %s, or the PEM block itself)", err, FileName)
				}
			}
			if err := parsePublicKey(pemData); err != nil {
				return fail("key", "key does not parse: %v (cosign public-key or `cosign generate-key-pair` writes a PEM PUBLIC KEY block)", err)
			}
			e.KeyPEM = pemData
		default:
			k := e.Keyless
			if (k.Issuer == "") == (k.IssuerRegexp == "") {
				return fail("keyless", "keyless: write exactly one of issuer and issuerRegexp")
			}
			if (k.Subject == "") == (k.SubjectRegexp == "") {
				return fail("keyless", "keyless: write exactly one of subject and subjectRegexp")
			}
			for _, r := range []string{k.IssuerRegexp, k.SubjectRegexp} {
				if _, err := regexp.Compile(r); err != nil {
					return fail("keyless", "keyless: regular expression %q does not compile: %v", r, err)
				}
			}
			if e.TrustedRoot == "" {
				return fail("keyless", "keyless needs trustedRoot: a Sigstore trusted root JSON file (`cosign trusted-root create`), so that verification works offline")
			}
		}
		if e.TrustedRoot != "" {
			p := e.TrustedRoot
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			tr, err := os.ReadFile(p)
			if err != nil {
				return fail("trustedRoot", "trustedRoot: %v", err)
			}
			if !json.Valid(tr) {
				return fail("trustedRoot", "trustedRoot %s does not parse: not JSON (a Sigstore trusted root, application/vnd.dev.sigstore.trustedroot+json)", e.TrustedRoot)
			}
			e.TrustedRootJSON = tr
		}
	}
	return nil
}

// parsePublicKey checks that data holds a PEM PUBLIC KEY block with a
// PKIX public key (ECDSA, Ed25519 or RSA: what cosign keys are).
func parsePublicKey(data []byte) error {
	b, _ := pem.Decode(data)
	if b == nil {
		return fmt.Errorf("no PEM block")
	}
	if b.Type != "PUBLIC KEY" {
		return fmt.Errorf("PEM block is %q, want PUBLIC KEY (a private key does not belong here)", b.Type)
	}
	_, err := x509.ParsePKIXPublicKey(b.Bytes)
	return err
}

type entryLines struct {
	line   int
	fields map[string]int
}

// verifyLines returns the line of each verify entry and of its fields.
func verifyLines(data []byte) []entryLines {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return nil
	}
	doc := root.Content[0]
	var out []entryLines
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != "verify" {
			continue
		}
		for _, e := range doc.Content[i+1].Content {
			el := entryLines{line: e.Line, fields: map[string]int{}}
			for j := 0; j+1 < len(e.Content); j += 2 {
				el.fields[e.Content[j].Value] = e.Content[j].Line
			}
			out = append(out, el)
		}
	}
	return out
}

// UnusedVerifyEntries returns the entries (not off) that no reference of
// repos ("registry/repository") matched: a pattern that matches nothing is
// most likely a typo. Each is a warning naming its publish.yaml line.
func (c *Config) UnusedVerifyEntries(repos []string) []VerifyEntry {
	if c == nil {
		return nil
	}
	var out []VerifyEntry
	for _, e := range c.Verify {
		used := false
		for _, r := range repos {
			if e.MatchRepository(r) {
				used = true
				break
			}
		}
		if !used {
			out = append(out, e)
		}
	}
	return out
}
