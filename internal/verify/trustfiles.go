package verify

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/config"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// TrustPolicyFile is the file of the trust material (archive.TrustDir)
// that lists the verify rules and the keys and trusted roots they name.
const TrustPolicyFile = "policy.json"

// TrustRule is one rule of policy.json: a publish.yaml verify entry that
// is not off, with its key and trusted root as files of the trust
// material (paths relative to trust/).
type TrustRule struct {
	// Rule names the entry, "publish.yaml#L<line>".
	Rule    string          `json:"rule"`
	Match   string          `json:"match"`
	Mode    string          `json:"mode"`
	Index   string          `json:"index,omitempty"`
	Key     string          `json:"key,omitempty"`
	Keyless *config.Keyless `json:"keyless,omitempty"`
	// TrustedRoot is the Sigstore trusted root (keyless).
	TrustedRoot string `json:"trustedRoot,omitempty"`
}

// TrustFiles is the trust material of the verify policy of c, for an
// archive (archive.PackageOptions.Trust): each key as
// keys/verify-L<line>.pub (PEM), each trusted root as
// roots/verify-L<line>.json (as publish.yaml names it), and policy.json
// listing the rules (TrustRule) in publish.yaml's order. Nil without a
// policy.
func TrustFiles(c *config.Config) ([]archive.File, error) {
	if c == nil || len(c.Verify) == 0 {
		return nil, nil
	}
	var files []archive.File
	var rules []TrustRule
	for _, e := range c.Verify {
		if e.Mode == config.VerifyOff {
			continue
		}
		mode := e.Mode
		if mode == "" {
			mode = config.VerifyEnforce
		}
		r := TrustRule{Rule: fmt.Sprintf("%s#L%d", config.FileName, e.Line), Match: e.Match, Mode: mode, Index: e.Index, Keyless: e.Keyless}
		if e.KeyPEM != nil {
			r.Key = fmt.Sprintf("keys/verify-L%d.pub", e.Line)
			files = append(files, archive.File{Path: r.Key, Data: e.KeyPEM})
		}
		if e.TrustedRootJSON != nil {
			r.TrustedRoot = fmt.Sprintf("roots/verify-L%d.json", e.Line)
			files = append(files, archive.File{Path: r.TrustedRoot, Data: e.TrustedRootJSON})
		}
		rules = append(rules, r)
	}
	data, err := json.MarshalIndent(struct {
		Rules []TrustRule `json:"rules"`
	}{rules}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(files, archive.File{Path: TrustPolicyFile, Data: append(data, '\n')}), nil
}

// TrustReport is what CheckTrust found in the trust material.
type TrustReport struct {
	Rules, Keys, Roots int
	// Expiring says, one line each, which certificate or key of a trusted
	// root stops being valid between now and the date given, sorted.
	Expiring []string
}

// CheckTrust reads the trust material of an archive (archive.Contents.Trust)
// offline: policy.json, every key it names (a PEM public key) and every
// trusted root (a Sigstore trusted root). It lists in Expiring each
// certificate of a trusted root (Fulcio CAs and timestamp authorities:
// roots, intermediates, leaves) whose NotAfter, and each validity period
// (of a CA, a timestamp authority, a transparency or CT log) whose end,
// falls after now and before validUntil: signatures made after that date
// will not verify against it. Plain public keys have no expiry. Errors: a
// file that is missing or does not parse, naming it.
func CheckTrust(files []archive.File, now, validUntil time.Time) (*TrustReport, error) {
	byPath := map[string][]byte{}
	for _, f := range files {
		byPath[f.Path] = f.Data
	}
	data, ok := byPath[TrustPolicyFile]
	if !ok {
		return nil, fmt.Errorf("%s%s is missing", archive.TrustDir, TrustPolicyFile)
	}
	var pol struct {
		Rules []TrustRule `json:"rules"`
	}
	if err := json.Unmarshal(data, &pol); err != nil {
		return nil, fmt.Errorf("%s%s: %w", archive.TrustDir, TrustPolicyFile, err)
	}
	rep := &TrustReport{Rules: len(pol.Rules)}
	seen := map[string]bool{}
	for _, r := range pol.Rules {
		for _, p := range []string{r.Key, r.TrustedRoot} {
			if p == "" || seen[p] {
				continue
			}
			seen[p] = true
			data, ok := byPath[p]
			if !ok {
				return nil, fmt.Errorf("%s%s, named by %s, is missing", archive.TrustDir, p, r.Rule)
			}
			if p == r.Key {
				if _, err := cryptoutils.UnmarshalPEMToPublicKey(data); err != nil {
					return nil, fmt.Errorf("%s%s (%s): the key does not parse: %w", archive.TrustDir, p, r.Rule, err)
				}
				rep.Keys++
				continue
			}
			tr, err := root.NewTrustedRootFromJSON(data)
			if err != nil {
				return nil, fmt.Errorf("%s%s (%s): not a Sigstore trusted root: %w", archive.TrustDir, p, r.Rule, err)
			}
			rep.Roots++
			rep.Expiring = append(rep.Expiring, expiring(archive.TrustDir+p, tr, now, validUntil)...)
		}
	}
	sort.Strings(rep.Expiring)
	return rep, nil
}

// expiring lists what of tr (the file at where) stops being valid after
// now and before until.
func expiring(where string, tr *root.TrustedRoot, now, until time.Time) []string {
	var out []string
	within := func(end time.Time) bool { return !end.IsZero() && end.After(now) && end.Before(until) }
	cert := func(what string, c *x509.Certificate) {
		if c != nil && within(c.NotAfter) {
			out = append(out, fmt.Sprintf("%s: %s certificate %q expires %s", where, what, c.Subject.String(), c.NotAfter.UTC().Format(time.RFC3339)))
		}
	}
	period := func(what string, end time.Time) {
		if within(end) {
			out = append(out, fmt.Sprintf("%s: %s is valid until %s", where, what, end.UTC().Format(time.RFC3339)))
		}
	}
	for _, ca := range tr.FulcioCertificateAuthorities() {
		if f, ok := ca.(*root.FulcioCertificateAuthority); ok {
			cert("Fulcio CA root", f.Root)
			for _, c := range f.Intermediates {
				cert("Fulcio CA intermediate", c)
			}
			period("the Fulcio CA "+f.URI, f.ValidityPeriodEnd)
		}
	}
	for _, ta := range tr.TimestampingAuthorities() {
		if s, ok := ta.(*root.SigstoreTimestampingAuthority); ok {
			cert("timestamp authority root", s.Root)
			for _, c := range s.Intermediates {
				cert("timestamp authority intermediate", c)
			}
			cert("timestamp authority leaf", s.Leaf)
			period("the timestamp authority "+s.URI, s.ValidityPeriodEnd)
		}
	}
	for what, logs := range map[string]map[string]*root.TransparencyLog{"transparency log": tr.RekorLogs(), "CT log": tr.CTLogs()} {
		for _, l := range logs {
			period(strings.TrimSpace("the "+what+" "+l.BaseURL)+"'s key", l.ValidityPeriodEnd)
		}
	}
	return out
}

// FromTrust is the Verifier of the policy of an archive's trust material
// (TrustFiles: policy.json and the keys and trusted roots it names),
// written into dir (a scratch directory the caller removes) and read
// there as publish.yaml reads its own, so that the far side verifies
// with what the connected side packaged, offline. Nil without rules.
// Errors: the trust material does not parse (CheckTrust, config.Parse,
// New).
func FromTrust(files []archive.File, dir string) (*Verifier, error) {
	byPath := map[string][]byte{}
	for _, f := range files {
		byPath[f.Path] = f.Data
	}
	var pol struct {
		Rules []TrustRule `json:"rules"`
	}
	if err := json.Unmarshal(byPath[TrustPolicyFile], &pol); err != nil {
		return nil, fmt.Errorf("%s%s: %w", archive.TrustDir, TrustPolicyFile, err)
	}
	if len(pol.Rules) == 0 {
		return nil, nil
	}
	type entry struct {
		Match       string          `json:"match"`
		Mode        string          `json:"mode,omitempty"`
		Index       string          `json:"index,omitempty"`
		Key         string          `json:"key,omitempty"`
		Keyless     *config.Keyless `json:"keyless,omitempty"`
		TrustedRoot string          `json:"trustedRoot,omitempty"`
	}
	var entries []entry
	for _, r := range pol.Rules {
		for _, p := range []string{r.Key, r.TrustedRoot} {
			if p == "" {
				continue
			}
			if strings.Contains(p, "..") || strings.HasPrefix(p, "/") {
				return nil, fmt.Errorf("%s%s: %s names %q, not a file of the trust material", archive.TrustDir, TrustPolicyFile, r.Rule, p)
			}
			dst := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(dst, byPath[p], 0o644); err != nil {
				return nil, err
			}
		}
		entries = append(entries, entry{r.Match, r.Mode, r.Index, r.Key, r.Keyless, r.TrustedRoot})
	}
	data, err := json.MarshalIndent(map[string]any{"apiVersion": config.APIVersion, "kind": config.Kind, "verify": entries}, "", "  ")
	if err != nil {
		return nil, err
	}
	c, err := config.Parse(filepath.Join(dir, config.FileName), data)
	if err != nil {
		return nil, fmt.Errorf("the policy of %s%s: %w", archive.TrustDir, TrustPolicyFile, err)
	}
	v, err := New(c)
	if err != nil || v == nil {
		return v, err
	}
	// Results name the connected side's rule, publish.yaml:LINE.
	for i, e := range v.entries {
		e.where = strings.Replace(pol.Rules[i].Rule, "#L", ":", 1)
	}
	return v, nil
}
