package main

import (
	"bytes"
	"crypto/elliptic"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// TestSignedArchive: an archive signed as package
// --cosign-key signs it (a cosign encrypted key, its passphrase from the
// environment) passes publish verify --key and is pushed by publish push
// --key; one flipped byte in the archive, or in its bundle, fails both,
// and push then pushes nothing. The passphrase is never printed.
func TestSignedArchive(t *testing.T) {
	const pass = "correct horse battery staple"
	dir, keyFile, pubFile, ref := signedFixture(t, pass, 512, 2)
	out := filepath.Join(dir, "all.tgz")
	res, err := archive.WriteFile(t.Context(), out, archive.PackageOptions{Images: []archive.Image{{Ref: ref, Bundle: true}}, Level: archive.DefaultLevel})
	if err != nil {
		t.Fatal(err)
	}
	// What package --cosign-key does once the archive is written.
	t.Setenv("PUBLISH_COSIGN_KEY_PASSWORD", pass)
	f := signFlags{key: keyFile, pass: pass}
	k, err := f.load()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signArchive(k, out, res.SHA256); err != nil {
		t.Fatal(err)
	}
	if _, err := (&signFlags{key: keyFile, pass: "wrong"}).load(); err == nil || strings.Contains(err.Error(), "wrong") || !strings.Contains(err.Error(), "--cosign-key-password") {
		t.Errorf("wrong passphrase: %v", err)
	}

	dst := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(dst.Close)
	dstHost := strings.TrimPrefix(dst.URL, "http://")
	run := func(args ...string) (string, error) {
		root := newRootCmd()
		root.SetArgs(args)
		var buf bytes.Buffer
		root.SetOut(&buf)
		root.SetErr(&buf)
		err := root.Execute()
		if strings.Contains(buf.String(), pass) {
			t.Errorf("the passphrase was printed: %s", buf.String())
		}
		return buf.String(), err
	}
	pushed := func() bool {
		reg, _ := name.NewRegistry(dstHost, name.Insecure)
		list, err := remote.Catalog(t.Context(), reg)
		return err == nil && len(list) > 0
	}
	if outText, err := run("verify", "--key", pubFile, out); err != nil || !strings.Contains(outText, "signature "+out+".sigstore.json verifies with --key") {
		t.Fatalf("verify --key: %v\n%s", err, outText)
	}

	flip := func(path string, at int64) func() {
		data, _ := os.ReadFile(path)
		orig := append([]byte(nil), data...)
		data[at] ^= 1
		os.WriteFile(path, data, 0o644)
		return func() { os.WriteFile(path, orig, 0o644) }
	}
	for _, tc := range []struct {
		name string
		file string
		at   int64
	}{{"archive", out, res.Bytes / 2}, {"bundle", out + ".sigstore.json", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := os.ReadFile(tc.file)
			at := tc.at
			if tc.file != out {
				at = int64(bytes.Index(data, []byte(`"signature"`)) + 15) // a byte of the base64 signature
			}
			undo := flip(tc.file, at)
			defer undo()
			if _, err := run("verify", "--key", pubFile, out); err == nil {
				t.Error("verify --key passed")
			}
			text, err := run("push", out, "--dst-repo", dstHost+"/site", "--plain-http", "--key", pubFile)
			if err == nil || !strings.Contains(err.Error(), "nothing pushed") {
				t.Errorf("push --key: %v\n%s", err, text)
			}
			if pushed() {
				t.Error("push --key pushed something")
			}
		})
	}
	if text, err := run("push", out, "--dst-repo", dstHost+"/site", "--plain-http", "--key", pubFile); err != nil || !pushed() {
		t.Errorf("push --key of the signed archive: %v\n%s", err, text)
	}
}

// TestSignedSplitArchive: package --max-size --cosign-key signs every part
// and the index (printArchive); verify --key and push --key take the
// directory; a part whose signature is gone fails both, naming it.
func TestSignedSplitArchive(t *testing.T) {
	dir, keyFile, pubFile, ref := signedFixture(t, "pw", 100<<10, 3)
	media := filepath.Join(dir, "media")
	os.Mkdir(media, 0o755)
	out := filepath.Join(media, "all.tgz")
	res, err := archive.WriteParts(t.Context(), out, archive.SplitOptions{MaxSize: 128 << 10}, archive.PackageOptions{Images: []archive.Image{{Ref: ref, Bundle: true}}})
	if err != nil {
		t.Fatal(err)
	}
	k, err := (&signFlags{key: keyFile, pass: "pw"}).load()
	if err != nil {
		t.Fatal(err)
	}
	var printed bytes.Buffer
	if err := printArchive(&printed, k, out, res); err != nil {
		t.Fatal(err)
	}
	if len(res.Parts) < 2 || !strings.Contains(printed.String(), "signature "+archive.PartsPath(out)+".sigstore.json") {
		t.Fatalf("%d parts; printed:\n%s", len(res.Parts), printed.String())
	}
	run := func(args ...string) (string, error) {
		root := newRootCmd()
		root.SetArgs(args)
		var buf bytes.Buffer
		root.SetOut(&buf)
		root.SetErr(&buf)
		err := root.Execute()
		return buf.String(), err
	}
	if text, err := run("verify", "--key", pubFile, media); err != nil || !strings.Contains(text, "parts' verify with --key") {
		t.Fatalf("verify --key: %v\n%s", err, text)
	}
	second := filepath.Join(media, res.Parts[1].Name) + ".sigstore.json"
	os.Remove(second)
	if _, err := run("verify", "--key", pubFile, media); err == nil || !strings.Contains(err.Error(), res.Parts[1].Name) {
		t.Errorf("verify --key without the signature of part 2: %v", err)
	}
	dst := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(dst.Close)
	dstHost := strings.TrimPrefix(dst.URL, "http://")
	if _, err := run("push", media, "--dst-repo", dstHost+"/site", "--plain-http", "--key", pubFile); err == nil || !strings.Contains(err.Error(), res.Parts[1].Name) || !strings.Contains(err.Error(), "nothing pushed") {
		t.Errorf("push --key without the signature of part 2: %v", err)
	}
}

// signedFixture writes a cosign key pair (the private key encrypted with
// pass) into a new directory and pushes a random image (layers of size
// bytes) to an in-process registry; it returns the directory, the key
// files and the image's reference.
func signedFixture(t *testing.T, pass string, size int64, layers int64) (dir, keyFile, pubFile, ref string) {
	t.Helper()
	privPEM, pubPEM, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte(pass)))
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	keyFile, pubFile = filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.pub")
	os.WriteFile(keyFile, privPEM, 0o600)
	os.WriteFile(pubFile, pubPEM, 0o644)
	src := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(src.Close)
	ref = strings.TrimPrefix(src.URL, "http://") + "/example/app:v1"
	img, _ := random.Image(size, layers)
	r, _ := name.ParseReference(ref)
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	return dir, keyFile, pubFile, ref
}
