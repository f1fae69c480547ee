package archive

import (
	"archive/tar"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/testenv"
)

// tarFixture writes the images of pushFixture and one with a 3 MiB layer
// (past memBlob: sent from the file) as NAME.tar and NAME.tgz.
func tarFixture(t *testing.T) (tarPath, tgzPath string, refs []string) {
	t.Helper()
	host := startRegistry(t)
	imgs, idx := pushFixture(t, host)
	big := host + "/example/big:v1"
	writeImage(t, big, newLayer(t, 3<<20), newLayer(t, 2<<20))
	refs = append(imgs, idx, big)
	dir := t.TempDir()
	for _, out := range []string{filepath.Join(dir, "ops.tar"), filepath.Join(dir, "ops.tgz")} {
		var ims []Image
		for _, r := range refs {
			ims = append(ims, Image{Ref: r})
		}
		if _, err := WriteFile(ctx(t), out, PackageOptions{Images: ims, Level: DefaultLevel, Uncompressed: Uncompressed(out)}); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "ops.tar"), filepath.Join(dir, "ops.tgz"), refs
}

// TestUncompressedArchive: NAME.tar is a plain tar any tar reads, verifies
// as a .tgz does, and pushes the same digests, its large layers sent from
// the file.
func TestUncompressedArchive(t *testing.T) {
	tarPath, tgzPath, refs := tarFixture(t)
	f, err := os.Open(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	h, err := tar.NewReader(f).Next()
	f.Close()
	if err != nil || h.Name != LayoutFile {
		t.Fatalf("first entry of %s: %v %v, want %s", tarPath, h, err, LayoutFile)
	}
	v, err := Verify(tarPath, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Checksum || len(v.Contents.Images) != len(refs) {
		t.Errorf("verify: checksum %v, %d images", v.Checksum, len(v.Contents.Images))
	}
	dst := startRegistry(t)
	var fromFile int
	// Through the client's transport (retries, the watchdog that takes a
	// file body's offset as progress: registry.FileSection).
	c, err := registry.New(registry.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Push(ctx(t), tarPath, PushOptions{Map: mapTo(dst, "t"), Remote: c.Options(), Transport: c.Transport(), fromFile: func() { fromFile++ }})
	if err != nil {
		t.Fatal(err)
	}
	if fromFile != 2 {
		t.Errorf("%d layers sent from the file, want the 2 larger than %d bytes", fromFile, memBlob)
	}
	dst2 := startRegistry(t) // go-containerregistry's registry shares blobs between repositories
	one, err := Push(ctx(t), tgzPath, PushOptions{Map: mapTo(dst2, "t")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Images) != len(one.Images) || res.BlobsPushed != one.BlobsPushed || res.BytesPushed != one.BytesPushed {
		t.Errorf(".tar pushed %d images, %d blobs, %d bytes; .tgz %d, %d, %d", len(res.Images), res.BlobsPushed, res.BytesPushed, len(one.Images), one.BlobsPushed, one.BytesPushed)
	}
	for i, im := range res.Images {
		d, err := remote.Head(mustRef(t, im.Destination))
		if err != nil || d.Digest.String() != one.Images[i].Digest || im.Source != one.Images[i].Source {
			t.Errorf("%s: %v (%v), the .tgz pushed %s", im.Destination, d, err, one.Images[i].Digest)
		}
	}
	// Over TLS (Debian's docker-registry with htpasswd) the file is read
	// as any body; the registry checks every digest.
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	tls, err := Push(ctx(t), tarPath, PushOptions{Map: mapTo(reg.Host, "t"), Remote: reg.Options(), Keychain: reg.Keychain(), Transport: reg.Transport()})
	if err != nil {
		t.Fatal(err)
	}
	for i, im := range tls.Images {
		d, err := remote.Head(mustRef(t, im.Destination), reg.Options()...)
		if err != nil || d.Digest.String() != one.Images[i].Digest {
			t.Errorf("over TLS %s: %v (%v), the .tgz pushed %s", im.Destination, d, err, one.Images[i].Digest)
		}
	}
}

// TestUncompressedArchiveDamaged: a .tar with bytes after its end, cut
// short, or with a byte flipped inside a layer sent from the file is
// refused by push with the entry named, and nothing is tagged.
func TestUncompressedArchiveDamaged(t *testing.T) {
	tarPath, _, _ := tarFixture(t)
	data, err := os.ReadFile(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Verify(tarPath, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The large layer's bytes: the blob entry of 3 MiB and more.
	var big string
	for _, m := range v.Contents.Manifests {
		for _, c := range m.Children {
			if c.Size > 3<<20 {
				big = c.Digest.Hex
			}
		}
	}
	at := strings.Index(string(data), BlobsDir+big)
	if big == "" || at < 0 {
		t.Fatal("no large layer in the fixture")
	}
	flipped := append([]byte(nil), data...)
	flipped[at+512+1<<20] ^= 0xff // inside its bytes (a header block after the name)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"trailing", append(append([]byte(nil), data...), 'x'), "bytes after the end of the tar"},
		{"truncated", data[:at+512+2<<20], "truncated"},
		{"flipped", flipped, "not matching its digest"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "ops.tar")
			if err := os.WriteFile(p, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			dst := startRegistry(t)
			res, err := Push(ctx(t), p, PushOptions{Map: mapTo(dst, "t")})
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("push: %v, %+v; want an error saying %q", err, res, c.want)
			}
			t.Logf("push: %v", err)
			if c.name != "trailing" && !strings.Contains(err.Error(), BlobsDir) {
				t.Errorf("the error names no entry: %v", err)
			}
			if _, err := Verify(p, Limits{}, nil); err == nil {
				t.Error("verify accepted it")
			}
		})
	}
}

// TestSplitUncompressedArchive: NAME.tar split gives NAME.part-NNNN.tar
// parts, none larger than the limit, that verify and push as the archive
// in one file does.
func TestSplitUncompressedArchive(t *testing.T) {
	_, _, refs := tarFixture(t)
	var ims []Image
	for _, r := range refs {
		ims = append(ims, Image{Ref: r})
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "ops.tar")
	const max = 3<<20 + 64<<10
	res, err := WriteParts(ctx(t), out, SplitOptions{MaxSize: max}, PackageOptions{Images: ims, Uncompressed: true})
	if err != nil {
		t.Fatal(err)
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "ops.part-*.tar"))
	if len(parts) < 2 || len(res.Warnings) > 0 {
		t.Fatalf("parts %v, warnings %v", parts, res.Warnings)
	}
	for _, p := range parts {
		if st, err := os.Stat(p); err != nil || st.Size() > max || !fileIsTarPath(t, p) {
			t.Errorf("%s: %v bytes (limit %d), a plain tar: %v", p, st.Size(), max, fileIsTarPath(t, p))
		}
	}
	if _, err := Verify(PartsPath(out), Limits{}, nil); err != nil {
		t.Fatal(err)
	}
	dst := startRegistry(t)
	pr, err := Push(ctx(t), dir, PushOptions{Map: mapTo(dst, "t")})
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Images) != len(refs) {
		t.Errorf("pushed %d images of %d", len(pr.Images), len(refs))
	}
}

func fileIsTarPath(t *testing.T, p string) bool {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return fileIsTar(f)
}
