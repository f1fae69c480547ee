package olmtest

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// opmLayers holds the layer of each opm binary PushOPMBase put in an
// image, by path: compressing 90 MB once per test binary is enough.
var opmLayers sync.Map

// opmLayer returns a layer holding the file at bin as /bin/opm (mode 0755).
func opmLayer(t *testing.T, bin string) v1.Layer {
	t.Helper()
	if l, ok := opmLayers.Load(bin); ok {
		return l.(v1.Layer)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "bin/", Mode: 0o755},
		{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777},
		{Typeflag: tar.TypeReg, Name: "bin/opm", Mode: 0o755, Size: int64(len(data))},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Digest(); err != nil { // compress once, here
		t.Fatal(err)
	}
	opmLayers.Store(bin, l)
	return l
}

// PushOPMBase pushes to ref an opm base image as the upstream one is
// built (release/goreleaser.opm.Dockerfile): an OCI image index of
// linux/amd64 and linux/arm64 images (both holding the opm binary bin, a
// stand-in for the other platform), /bin/opm as the entrypoint, user
// 1001. opts reach the registry.
func PushOPMBase(t *testing.T, bin, ref string, opts ...remote.Option) name.Reference {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range []string{"amd64", "arm64"} {
		base, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		img, err := mutate.AppendLayers(mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1), must(t, base))
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, opmLayer(t, bin)); err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		cf.Config.User, cf.Config.Entrypoint = "1001", []string{"/bin/opm"}
		cf.OS, cf.Architecture = "linux", arch
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx, opts...); err != nil {
		t.Fatal(err)
	}
	return r
}

// must returns the one layer of img.
func must(t *testing.T, img v1.Image) v1.Layer {
	t.Helper()
	ls, err := img.Layers()
	if err != nil || len(ls) != 1 {
		t.Fatalf("random image: %d layers, %v", len(ls), err)
	}
	return ls[0]
}

// OtherVersion writes a copy of the opm binary bin whose Go build
// information names operator-registry at version to instead of from (both
// of one length, "v1.73.0" and "v1.72.0"), and returns its path: the same
// opm, which a catalog build reads as another release (olm.BaseOPMVersion).
// CI builds one opm; this stands in for a base image of another version.
func OtherVersion(t *testing.T, bin, from, to string) string {
	t.Helper()
	if len(from) != len(to) {
		t.Fatalf("versions %s and %s differ in length", from, to)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	old := []byte("github.com/operator-framework/operator-registry\t" + from + "\t")
	if !bytes.Contains(data, old) {
		t.Fatalf("%s: no operator-registry %s in its build information", bin, from)
	}
	data = bytes.ReplaceAll(data, old, []byte("github.com/operator-framework/operator-registry\t"+to+"\t"))
	out := filepath.Join(t.TempDir(), "opm")
	if err := os.WriteFile(out, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// ExtractOPM writes the /bin/opm of image ref (an index: its first
// platform image) to a new file and returns its path: the base image's own
// opm, as the catalog image runs it.
func ExtractOPM(t *testing.T, ref string, opts ...remote.Option) string {
	t.Helper()
	img := firstImage(t, ref, opts...)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for i := len(layers) - 1; i >= 0; i-- {
		rc, err := layers[i].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Clean(h.Name) != "bin/opm" || h.Typeflag != tar.TypeReg {
				continue
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			rc.Close()
			out := filepath.Join(t.TempDir(), "opm")
			if err := os.WriteFile(out, data, 0o755); err != nil {
				t.Fatal(err)
			}
			return out
		}
		rc.Close()
	}
	t.Fatalf("%s has no /bin/opm", ref)
	return ""
}
