package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-publish/publish/internal/model"
)

func testPublicKeyPEM(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

const head = "apiVersion: publish.operator-publish.io/v1alpha1\nkind: PublishConfig\n"

// TestVerifyPolicy: a policy with a key file, an inline key and a keyless
// identity loads with its lines; the pattern matches registry/repository.
func TestVerifyPolicy(t *testing.T) {
	dir := t.TempDir()
	pub := testPublicKeyPEM(t)
	os.WriteFile(filepath.Join(dir, "vendor.pub"), []byte(pub), 0o644)
	os.WriteFile(filepath.Join(dir, "root.json"), []byte(`{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`), 0o644)
	inline := "    " + strings.ReplaceAll(strings.TrimSpace(pub), "\n", "\n    ")
	p := filepath.Join(dir, FileName)
	os.WriteFile(p, []byte(head+`verify:
- match: quay.io/vendor/**
  key: vendor.pub
  index: children
- match: registry.example.com/*/operator
  mode: warn
  key: |
`+inline+`
- match: ghcr.io/acme/*
  keyless:
    issuer: https://token.actions.githubusercontent.com
    subjectRegexp: ^https://github.com/acme/.*$
  trustedRoot: root.json
- match: docker.io/**
  mode: off
`), 0o644)
	c, err := Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Verify) != 4 {
		t.Fatalf("%d entries", len(c.Verify))
	}
	e := c.Verify
	if e[0].Line != 4 || e[0].Mode != VerifyEnforce || e[0].Index != IndexChildren || len(e[0].KeyPEM) == 0 {
		t.Errorf("entry 0: %+v", e[0])
	}
	if e[1].Mode != VerifyWarn || e[1].Index != IndexOwn || !strings.Contains(string(e[1].KeyPEM), "PUBLIC KEY") {
		t.Errorf("entry 1: %+v", e[1])
	}
	if e[2].Lines["trustedRoot"] == 0 || len(e[2].TrustedRootJSON) == 0 || e[2].Keyless.String() != "issuer https://token.actions.githubusercontent.com, subject ~^https://github.com/acme/.*$" {
		t.Errorf("entry 2: %+v %s", e[2], e[2].Keyless)
	}
	for repo, want := range map[string]int{"quay.io/vendor/a/b": 0, "registry.example.com/x/operator": 1, "registry.example.com/x/y/operator": -1, "ghcr.io/acme/op": 2, "ghcr.io/acme/op/sub": -1, "quay.io/vendorx/a": -1} {
		got := -1
		for i := range e {
			if e[i].MatchRepository(repo) {
				got = i
				break
			}
		}
		if got != want {
			t.Errorf("%s matched entry %d, want %d", repo, got, want)
		}
	}
	unused := c.UnusedVerifyEntries([]string{"quay.io/vendor/a", "ghcr.io/acme/op"})
	if len(unused) != 2 || unused[0].Match != "registry.example.com/*/operator" || unused[1].Mode != VerifyOff {
		t.Errorf("unused: %+v", unused)
	}
}

// TestVerifyPolicyErrors: every bad entry is an error at its publish.yaml
// line, naming what to write.
func TestVerifyPolicyErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte("not json"), 0o644)
	os.WriteFile(filepath.Join(dir, "priv.pem"), []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"), 0o644)
	p := filepath.Join(dir, FileName)
	for name, tc := range map[string]struct{ body, want string }{
		"no key":           {"verify:\n- match: quay.io/x/*\n  mode: enforce\n", "publish.yaml:4: verify[0]: no key and no keyless identity"},
		"key not pem":      {"verify:\n- match: quay.io/x/*\n  key: \"-----BEGIN PUBLIC KEY-----\\nzz\\n-----END PUBLIC KEY-----\\n\"\n", "publish.yaml:5: verify[0]: key does not parse"},
		"private key":      {"verify:\n- match: quay.io/x/*\n  key: priv.pem\n", "publish.yaml:5: verify[0]: key does not parse: PEM block is \"EC PRIVATE KEY\""},
		"key missing":      {"verify:\n- match: quay.io/x/*\n  key: nowhere.pub\n", "publish.yaml:5: verify[0]: key: open"},
		"root not json":    {"verify:\n- match: a/b\n  keyless: {issuer: i, subject: s}\n  trustedRoot: bad.json\n", "publish.yaml:6: verify[0]: trustedRoot bad.json does not parse"},
		"keyless no root":  {"verify:\n- match: a/b\n  keyless: {issuer: i, subject: s}\n", "publish.yaml:5: verify[0]: keyless needs trustedRoot"},
		"keyless no sub":   {"verify:\n- match: a/b\n  keyless: {issuer: i}\n  trustedRoot: bad.json\n", "publish.yaml:5: verify[0]: keyless: write exactly one of subject"},
		"bad regexp":       {"verify:\n- match: a/b\n  keyless: {issuer: i, subjectRegexp: \"(\"}\n  trustedRoot: bad.json\n", "publish.yaml:5: verify[0]: keyless: regular expression"},
		"bad mode":         {"verify:\n- match: a/b\n  mode: strict\n", "publish.yaml:5: verify[0]: mode \"strict\""},
		"bad index":        {"verify:\n- match: a/b\n  mode: off\n  index: all\n", "publish.yaml:6: verify[0]: index \"all\""},
		"no match":         {"verify:\n- mode: off\n", "publish.yaml:4: verify[0]: match is empty"},
		"digest in match":  {"verify:\n- match: a/b@sha256:00\n  mode: off\n", "publish.yaml:4: verify[0]: match \"a/b@sha256:00\""},
		"unknown field":    {"verify:\n- match: a/b\n  keys: x\n", "publish.yaml:5: unknown field verify[0].keys: did you mean key?"},
		"second entry bad": {"verify:\n- match: a/b\n  mode: off\n- match: c/d\n", "publish.yaml:6: verify[1]: no key"},
	} {
		os.WriteFile(p, []byte(head+tc.body), 0o644)
		if _, err := Load(p, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
	}
}

// TestVerifyPolicyIfSigned: mode if-signed loads like enforce (it needs a
// key or a keyless identity), it is the mode model.Verification knows as
// VerifyModeIfSigned, and an unknown mode names all four.
func TestVerifyPolicyIfSigned(t *testing.T) {
	if VerifyIfSigned != model.VerifyModeIfSigned {
		t.Fatalf("config %q, model %q", VerifyIfSigned, model.VerifyModeIfSigned)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "vendor.pub"), []byte(testPublicKeyPEM(t)), 0o644)
	p := filepath.Join(dir, FileName)
	for body, want := range map[string]string{
		"verify:\n- match: quay.io/vendor/**\n  mode: if-signed\n  key: vendor.pub\n": "",
		"verify:\n- match: quay.io/vendor/**\n  mode: if-signed\n":                    "publish.yaml:4: verify[0]: no key and no keyless identity",
		"verify:\n- match: quay.io/vendor/**\n  mode: ifsigned\n  key: vendor.pub\n":  "publish.yaml:5: verify[0]: mode \"ifsigned\": write enforce (every image signed), if-signed (a signature, when there is one, must verify), warn or off",
	} {
		os.WriteFile(p, []byte(head+body), 0o644)
		c, err := Load(p, true)
		if want == "" {
			if err != nil || c.Verify[0].Mode != VerifyIfSigned || len(c.Verify[0].KeyPEM) == 0 {
				t.Errorf("%q: %v %+v", body, err, c)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}
