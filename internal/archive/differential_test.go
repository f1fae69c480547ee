package archive

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-publish/publish/internal/testenv"
)

// writeImage pushes an image of layers to ref and returns it.
func writeImage(t *testing.T, ref string, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, ref), img); err != nil {
		t.Fatal(err)
	}
	return img
}

func newLayer(t *testing.T, size int64) v1.Layer {
	t.Helper()
	l, err := random.Layer(size, types.OCILayer)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// blobBytes is the size of an image's config and of the given layers.
func blobBytes(t *testing.T, img v1.Image, layers ...v1.Layer) int64 {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	n := m.Config.Size
	for _, l := range layers {
		s, _ := l.Size()
		n += s
	}
	return n
}

// TestDifferentialArchive: after one upgrade (a new operator version, a new
// operator sharing the base layer, an unchanged worker), the archive made
// against the first holds only the new blobs; it pushes onto a site that
// received the first archive (the shared layer mounted into the new
// repository) and is refused, with the missing images, on one that did not.
func TestDifferentialArchive(t *testing.T) {
	src := startRegistry(t)
	base := newLayer(t, 30<<10)
	opV1 := src + "/example/operator:v1"
	worker := src + "/example/worker:v1"
	writeImage(t, opV1, base, newLayer(t, 20<<10))
	writeImage(t, worker, base, newLayer(t, 20<<10))
	dir := t.TempDir()
	first := filepath.Join(dir, "site-1.tgz")
	full, err := WriteFile(ctx(t), first, PackageOptions{Images: []Image{{Ref: opV1, Bundle: true}, {Ref: worker}}})
	if err != nil {
		t.Fatal(err)
	}

	// The upgrade: operator v2, and a new operator on the same base layer.
	opV2, newOp := src+"/example/operator:v2", src+"/example/new-operator:v1"
	l2, n1 := newLayer(t, 25<<10), newLayer(t, 15<<10)
	img2 := writeImage(t, opV2, base, l2)
	imgN := writeImage(t, newOp, base, n1)
	upgrade := []Image{{Ref: opV1, Bundle: true}, {Ref: opV2, Bundle: true}, {Ref: worker}, {Ref: newOp}}
	// The base, from the small digest list beside it and from the archive.
	b, err := LoadBase([]string{DigestsPath(first)})
	if err != nil {
		t.Fatal(err)
	}
	fromArchive, err := LoadBase([]string{first})
	if err != nil {
		t.Fatal(err)
	}
	if b.refs[0].SHA256 != fromArchive.refs[0].SHA256 {
		t.Errorf("the digest list beside (%s) and inside (%s) the archive differ", b.refs[0].SHA256, fromArchive.refs[0].SHA256)
	}
	second := filepath.Join(dir, "site-2.tgz")
	diff, err := WriteFile(ctx(t), second, PackageOptions{Images: upgrade, Base: b})
	if err != nil {
		t.Fatal(err)
	}
	want := blobBytes(t, img2, l2) + blobBytes(t, imgN, n1)
	t.Logf("full archive: %d blobs, %d bytes; differential: %d blobs, %d bytes (left out: %d images)", full.Blobs, full.BlobBytes, diff.Blobs, diff.BlobBytes, diff.BaseLeftOut)
	if diff.BlobBytes != want || diff.Blobs != 4 || diff.BaseLeftOut != 2 || len(diff.Images) != 2 {
		t.Errorf("differential: %d blobs, %d bytes (want 4 and %d, the new configs and layers), %d images left out (want 2)", diff.Blobs, diff.BlobBytes, want, diff.BaseLeftOut)
	}
	v, err := Verify(second, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Contents.Annotations[AnnotationBase] == "" || !strings.Contains(v.Contents.Annotations[AnnotationBase], "site-1.digests.json") {
		t.Errorf("the differential archive names its base: %q", v.Contents.Annotations[AnnotationBase])
	}

	// A site that did not get the first archive: refused with the list.
	fresh := startRecorder(t)
	_, err = Push(ctx(t), second, PushOptions{Map: mapTo(fresh.host, "x"), TempDir: t.TempDir()})
	var bm *BaseMissingError
	if !errors.As(err, &bm) || len(bm.Missing) != 2 || !strings.Contains(err.Error(), "worker:v1") || !strings.Contains(err.Error(), "operator:v1") {
		t.Fatalf("push onto a site without the base: %v", err)
	}
	if n := fresh.count("PUT"); n != 0 {
		t.Errorf("refused push made %d PUT requests", n)
	}
	if n := fresh.count("HEAD", "/manifests/"); n != 2 {
		t.Errorf("%d HEAD requests of manifests for the base's 2 images", n)
	}

	// A site that got it: the new images arrive, the base layer mounted
	// into the new operator's repository.
	// docker-registry: blobs are per repository (go-containerregistry's
	// in-process registry shares them all).
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	site := reg.Host
	if _, err := Push(ctx(t), first, PushOptions{Map: mapTo(site, "x"), TempDir: t.TempDir(), Remote: reg.Options(), Keychain: reg.Keychain(), Transport: reg.Transport()}); err != nil {
		t.Fatal(err)
	}
	res, err := Push(ctx(t), second, PushOptions{Map: mapTo(site, "x"), TempDir: t.TempDir(), Remote: reg.Options(), Keychain: reg.Keychain(), Transport: reg.Transport()})
	if err != nil {
		t.Fatal(err)
	}
	if res.BlobsPushed != 4 || res.BlobsMounted != 1 {
		t.Errorf("pushed %d blobs, mounted %d (want 4 and the base layer 1)", res.BlobsPushed, res.BlobsMounted)
	}
	for _, r := range []string{opV2, newOp, opV1, worker} {
		s, _ := remote.Head(mustRef(t, r))
		d, _ := mapTo(site, "x")(r)
		got, err := remote.Get(d, reg.Options()...)
		if err != nil || got.Digest != s.Digest {
			t.Errorf("%s at the site: %v", d, err)
			continue
		}
		if img, err := got.Image(); err == nil {
			if err := validateRemote(img); err != nil {
				t.Errorf("%s: %v", d, err)
			}
		}
	}
}

// validateRemote reads every layer of img (at the destination).
func validateRemote(img v1.Image) error {
	ls, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range ls {
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		rc.Close()
	}
	return nil
}
