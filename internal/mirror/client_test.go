package mirror

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const sha = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDestination(t *testing.T) {
	tests := []struct {
		dst, src       string
		wantHost, want string
		wantRepo       string
	}{
		{"host:5000/a/b", "quay.io/org/op:v1", "host:5000", "host:5000/a/b/org/op:v1", "a/b/org/op"},
		{"host:5000/a/b", "quay.io/org/op@" + sha, "host:5000", "host:5000/a/b/org/op@" + sha, "a/b/org/op"},
		{"host:5000/a/b", "quay.io/org/op:v1@" + sha, "host:5000", "host:5000/a/b/org/op@" + sha, "a/b/org/op"},
		{"host:5000/a/b", "busybox:1", "host:5000", "host:5000/a/b/library/busybox:1", "a/b/library/busybox"},
		{"host:5000/a/b", "busybox", "host:5000", "host:5000/a/b/library/busybox:latest", "a/b/library/busybox"},
		{"host:5000/a/b", "docker.io/bitnami/redis:7", "host:5000", "host:5000/a/b/bitnami/redis:7", "a/b/bitnami/redis"},
		{"host:5000/a/b", "index.docker.io/library/alpine@" + sha, "host:5000", "host:5000/a/b/library/alpine@" + sha, "a/b/library/alpine"},
		{"host:5000/a/b", "registry.k8s.io/x/y/z/w:t", "host:5000", "host:5000/a/b/x/y/z/w:t", "a/b/x/y/z/w"},
		{"host:5000/a/b", "quay.io:443/org/op:v1", "host:5000", "host:5000/a/b/org/op:v1", "a/b/org/op"},
		{"host:5000/a/b", "host:5000/a/b/org/op:v1", "host:5000", "host:5000/a/b/a/b/org/op:v1", "a/b/a/b/org/op"},
		{"host:5000", "quay.io/org/op:v1", "host:5000", "host:5000/org/op:v1", "org/op"},
		{"registry.example.com", "quay.io/org/op:v1", "registry.example.com", "registry.example.com/org/op:v1", "org/op"},
		{"https://harbor.example.com:8443/project/", "quay.io/org/op:v1", "harbor.example.com:8443", "harbor.example.com:8443/project/org/op:v1", "project/org/op"},
		{"http://localhost:5000/p", "quay.io/org/op:v1", "localhost:5000", "localhost:5000/p/org/op:v1", "p/org/op"},
		{"127.0.0.1:5000/p", "ghcr.io/o/r:sha-1", "127.0.0.1:5000", "127.0.0.1:5000/p/o/r:sha-1", "p/o/r"},
	}
	for _, tc := range tests {
		t.Run(tc.dst+" "+tc.src, func(t *testing.T) {
			c, err := New(Options{DstRegistry: tc.dst})
			if err != nil {
				t.Fatal(err)
			}
			if c.DstHost() != tc.wantHost {
				t.Errorf("DstHost = %q, want %q", c.DstHost(), tc.wantHost)
			}
			src, err := c.ParseReference(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Destination(src)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("Destination = %q, want %q", got, tc.want)
			}
			if r := c.DestinationRepository(src); r != tc.wantRepo {
				t.Errorf("DestinationRepository = %q, want %q", r, tc.wantRepo)
			}
			if got.Context().RegistryStr() != tc.wantHost {
				t.Errorf("destination registry %q, want %q", got.Context().RegistryStr(), tc.wantHost)
			}
		})
	}

	t.Run("no destination", func(t *testing.T) {
		c, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		src, _ := name.ParseReference("quay.io/org/op:v1")
		if d, err := c.Destination(src); err == nil || !strings.Contains(err.Error(), "--dst-registry") {
			t.Errorf("Destination = %v, %v; want an error naming --dst-registry", d, err)
		}
	})
	t.Run("plain HTTP", func(t *testing.T) {
		c, err := New(Options{DstRegistry: "registry.example.com/p", PlainHTTP: true})
		if err != nil {
			t.Fatal(err)
		}
		src, err := c.ParseReference("quay.io/org/op:v1")
		if err != nil {
			t.Fatal(err)
		}
		dst, err := c.Destination(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []name.Reference{src, dst} {
			if s := r.Context().Scheme(); s != "http" {
				t.Errorf("%s: scheme %s, want http", r, s)
			}
		}
	})
}

// TestPlainHTTPHosts: plain HTTP for the listed registries only; the
// others keep HTTPS.
func TestPlainHTTPHosts(t *testing.T) {
	c, err := New(Options{DstRegistry: "harbor.example.com/p", PlainHTTPHosts: []string{"legacy.example.com:5000", "http://[fd00::1]:5000"}})
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]string{
		"legacy.example.com:5000/a/b:v1": "http",
		"[fd00::1]:5000/a/b:v1":          "http",
		"legacy.example.com/a/b:v1":      "https",
		"quay.io/a/b:v1":                 "https",
	} {
		r, err := c.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		if s := r.Context().Scheme(); s != want {
			t.Errorf("%s: scheme %s, want %s", ref, s, want)
		}
	}
	dst, _ := c.ParseReference("quay.io/a/b:v1")
	if d, _ := c.Destination(dst); d.Context().Scheme() != "https" {
		t.Errorf("destination %s: scheme %s", d, d.Context().Scheme())
	}
	if _, err := New(Options{PlainHTTPHosts: []string{"bad host"}}); err == nil {
		t.Error("a malformed plain HTTP registry was accepted")
	}
}

func TestParseChallenge(t *testing.T) {
	for h, want := range map[string][2]string{
		`Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:a/b:pull,push"`: {"Bearer", "realm=https://auth.example.com/token service=registry.example.com scope=repository:a/b:pull,push"},
		`Basic realm="test"`:             {"Basic", "realm=test"},
		`bearer realm=x, service="a\"b"`: {"bearer", `realm=x service=a"b`},
		`Basic`:                          {"Basic", ""},
	} {
		scheme, params := parseChallenge(h)
		var got []string
		for _, k := range []string{"realm", "service", "scope"} {
			if v, ok := params[k]; ok {
				got = append(got, k+"="+v)
			}
		}
		if scheme != want[0] || strings.Join(got, " ") != want[1] {
			t.Errorf("parseChallenge(%s) = %q %q, want %q", h, scheme, got, want)
		}
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyOnly := write("key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})))
	notPEM := write("not.pem", "this is not a certificate\n")
	emptyFile := write("empty.pem", "")
	garbledCert := write("garbled.pem", "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n")

	tests := []struct {
		name string
		o    Options
		want string // in the error
	}{
		{"space in host", Options{DstRegistry: "bad host/p"}, "--dst-registry"},
		{"bad port", Options{DstRegistry: "host:port/p"}, "--dst-registry"},
		{"two ports", Options{DstRegistry: "host:5000:5001"}, "--dst-registry"},
		{"empty host", Options{DstRegistry: "/prefix"}, "--dst-registry"},
		{"only a scheme", Options{DstRegistry: "https://"}, "--dst-registry"},
		{"uppercase prefix", Options{DstRegistry: "host:5000/Project"}, "prefix"},
		{"empty prefix component", Options{DstRegistry: "host:5000/a//b"}, "prefix"},
		{"bad character in prefix", Options{DstRegistry: "host:5000/a b"}, "prefix"},
		{"tag in prefix", Options{DstRegistry: "host:5000/a:v1"}, "prefix"},
		{"prefix component starts with a dash", Options{DstRegistry: "host:5000/-a"}, "prefix"},
		{"prefix component ends with a dash", Options{DstRegistry: "host:5000/a-"}, "prefix"},
		{"two dots in a prefix component", Options{DstRegistry: "host:5000/a..b"}, "prefix"},
		{"three underscores in a prefix component", Options{DstRegistry: "host:5000/a___b"}, "prefix"},
		{"port zero", Options{DstRegistry: "host:0/p"}, "--dst-registry"},
		{"port too large", Options{DstRegistry: "host:65536/p"}, "--dst-registry"},
		{"empty port", Options{DstRegistry: "host:/p"}, "--dst-registry"},
		{"host component ends with a dash", Options{DstRegistry: "host-.example.com/p"}, "--dst-registry"},
		{"empty host component", Options{DstRegistry: "host..example.com/p"}, "--dst-registry"},
		{"unclosed IPv6", Options{DstRegistry: "[::1:5000/p"}, "--dst-registry"},
		{"bracketed IPv4", Options{DstRegistry: "[127.0.0.1]:5000/p"}, "--dst-registry"},
		{"missing CA file", Options{DstRegistry: "host:5000", CAFile: filepath.Join(dir, "absent.pem")}, "--ca-file"},
		{"CA file is not PEM", Options{DstRegistry: "host:5000", CAFile: notPEM}, "no PEM certificate"},
		{"CA file is empty", Options{DstRegistry: "host:5000", CAFile: emptyFile}, "no PEM certificate"},
		{"CA file holds a key only", Options{DstRegistry: "host:5000", CAFile: keyOnly}, "no PEM certificate"},
		{"CA file holds a garbled certificate", Options{DstRegistry: "host:5000", CAFile: garbledCert}, "no PEM certificate"},
		{"CA file is a directory", Options{DstRegistry: "host:5000", CAFile: dir}, "--ca-file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.o)
			if err == nil {
				t.Fatalf("New(%+v) = %+v, want an error", tc.o, c)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}

	for _, ok := range []Options{
		{},
		{DstRegistry: "host"},
		{DstRegistry: "host:5000/a/b-c/d_e/f.g/h__i/j--k"},
		{DstRegistry: "[::1]:5000/p"},
		{DstRegistry: "[::1]"},
		{DstRegistry: "127.0.0.1:65535"},
		{DstRegistry: "Registry.Example.COM:5000/p"},
		{DstRegistry: "docker.io/myorg"},
		{DstRegistry: "xn--bcher-kva.example/p"},
	} {
		if _, err := New(ok); err != nil {
			t.Errorf("New(%+v): %v", ok, err)
		}
	}
}

func TestKeychain(t *testing.T) {
	src := Credentials{Username: "src-user", Password: "src-pass"}
	dst := Credentials{Username: "dst-user", Password: "dst-pass"}
	fallback := Credentials{Username: fallbackUser, Password: fallbackPass}
	tests := []struct {
		name     string
		o        Options
		registry string
		want     Credentials // zero: anonymous
	}{
		{"destination host", Options{DstRegistry: "reg.example.com:5000/p", Src: src, Dst: dst}, "reg.example.com:5000", dst},
		{"source host", Options{DstRegistry: "reg.example.com:5000/p", Src: src, Dst: dst}, "quay.io", src},
		{"same name, other port", Options{DstRegistry: "reg.example.com:5000/p", Src: src, Dst: dst}, "reg.example.com", src},
		{"docker hub as a source", Options{DstRegistry: "reg.example.com:5000/p", Src: src, Dst: dst}, "docker.io", src},
		{"docker hub as the destination", Options{DstRegistry: "docker.io", Src: src, Dst: dst}, "docker.io", dst},
		{"docker hub as the destination, with a prefix", Options{DstRegistry: "docker.io/myorg", Src: src, Dst: dst}, "docker.io", dst},
		{"docker hub as the destination, index name", Options{DstRegistry: "index.docker.io/myorg", Src: src, Dst: dst}, "docker.io", dst},
		{"docker hub destination, other source", Options{DstRegistry: "docker.io/myorg", Src: src, Dst: dst}, "quay.io", src},
		{"no destination", Options{Src: src, Dst: dst}, "quay.io", src},
		{"source unset: docker config", Options{DstRegistry: "reg.example.com", Dst: dst}, fallbackHost, fallback},
		{"source unset, not in docker config: anonymous", Options{DstRegistry: "reg.example.com", Dst: dst}, "quay.io", Credentials{}},
		{"destination unset: docker config", Options{DstRegistry: fallbackHost + "/p", Src: src}, fallbackHost, fallback},
		{"destination unset, not in docker config: anonymous", Options{DstRegistry: "reg.example.com/p", Src: src}, "reg.example.com", Credentials{}},
		{"password only", Options{DstRegistry: "reg.example.com", Dst: Credentials{Password: "token"}}, "reg.example.com", Credentials{Password: "token"}},
		{"listed source host", Options{DstRegistry: "reg.example.com", Src: src, SrcHosts: []string{"quay.io", "docker.io"}}, "quay.io", src},
		{"listed docker hub", Options{DstRegistry: "reg.example.com", Src: src, SrcHosts: []string{"docker.io"}}, "index.docker.io", src},
		{"unlisted source host: never the source credentials", Options{DstRegistry: "reg.example.com", Src: src, SrcHosts: []string{"quay.io"}}, "evil.example.com", Credentials{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			reg, err := name.NewRegistry(tc.registry)
			if err != nil {
				t.Fatal(err)
			}
			for _, res := range []authn.Resource{reg, reg.Repo("some/repo")} {
				a, err := c.reg.Keychain().Resolve(res)
				if err != nil {
					t.Fatal(err)
				}
				cfg, err := a.Authorization()
				if err != nil {
					t.Fatal(err)
				}
				if got := (Credentials{Username: cfg.Username, Password: cfg.Password}); got != tc.want {
					t.Errorf("%s: credentials %+v, want %+v", res, got, tc.want)
				}
			}
		})
	}
}

// TestCAFile mirrors within a TLS registry whose certificate the system
// does not trust: it works with the certificate in --ca-file only.
func TestCAFile(t *testing.T) {
	reg := startRegistry(t, regOptions{tls: true})
	img := reg.pushImage(t, "src/app:v1")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: reg.srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := reg.Host + "/src/app:v1"

	t.Run("with the CA", func(t *testing.T) {
		c, err := New(Options{DstRegistry: reg.Host + "/mirror", CAFile: caFile})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := c.Mirror(context.Background(), []string{ref}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := digestOf(t, img)
		if len(rep.Images) != 1 || rep.Images[0].Digest != want.String() {
			t.Fatalf("report %+v, want digest %s", rep.Images, want)
		}
		got, err := remote.Head(reg.ref(t, "mirror/src/app:v1"), reg.opts...)
		if err != nil || got.Digest != want {
			t.Errorf("destination: %v, %v; want %s", got, err, want)
		}
	})
	t.Run("without the CA", func(t *testing.T) {
		c, err := New(Options{DstRegistry: reg.Host + "/mirror2"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Mirror(context.Background(), []string{ref}, nil)
		if err == nil {
			t.Fatal("Mirror succeeded without the CA")
		}
		t.Logf("without the CA: %v", err)
		if !strings.Contains(err.Error(), "--ca-file") || !strings.Contains(err.Error(), ref) {
			t.Errorf("error %q does not name the reference and --ca-file", err)
		}
		var ie *ImageError
		if !errors.As(err, &ie) || ie.Input {
			t.Errorf("err = %#v, want an *ImageError that is not an input error", err)
		}
		if _, err := remote.Head(reg.ref(t, "mirror2/src/app:v1"), reg.opts...); err == nil {
			t.Error("the image reached the destination")
		}
	})
}
