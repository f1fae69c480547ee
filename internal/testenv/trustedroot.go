package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
)

// ExpiringTrustedRoot returns a Sigstore trusted root (JSON,
// application/vnd.dev.sigstore.trustedroot+json) with one Fulcio CA,
// https://fulcio.test, whose self-signed root certificate "CN=test
// fulcio" is valid for the year before notAfter: what a trusted root
// looks like when its certificate is about to expire.
func ExpiringTrustedRoot(t testing.TB, notAfter time.Time) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test fulcio"}, NotBefore: notAfter.AddDate(-1, 0, 0), NotAfter: notAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, []root.CertificateAuthority{&root.FulcioCertificateAuthority{Root: cert, URI: "https://fulcio.test"}}, nil, nil, map[string]*root.TransparencyLog{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return data
}
