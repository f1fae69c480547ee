package archive

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const testManifest = `apiVersion: app.alauda.cn/v1beta1
kind: PackageManifest
metadata:
  name: op.v1.0.0
spec:
  type: bundle
  artifact: HOST/example/operator:v1
  version: 1.0.0
  info:
    displayName: Op
`

func packageFixture(t *testing.T, dir string, platforms []string) (string, *PackageResult, []string) {
	t.Helper()
	host := startRegistry(t)
	imgs, idx := pushFixture(t, host)
	out := filepath.Join(dir, "ops.tgz")
	res, err := WriteFile(ctx(t), out, PackageOptions{
		Images: []Image{{Ref: imgs[0], Bundle: true}, {Ref: imgs[1]}, {Ref: idx, Platforms: platforms}},
		Files:  []File{{Path: "op/1.0.0/manifest.yaml", Data: []byte(strings.ReplaceAll(testManifest, "HOST", host))}},
		Level:  DefaultLevel,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, res, append(imgs, idx)
}

func TestPackageAndVerify(t *testing.T) {
	out, res, refs := packageFixture(t, t.TempDir(), nil)
	if len(res.Images) != 3 {
		t.Fatalf("images: %+v", res.Images)
	}
	// 2 images + index + 2 children = 5 manifests; blobs: shared base once,
	// 2 extra layers, 2 configs, 2 index children's config+layer each.
	if res.Manifests != 5 || res.Blobs != 9 {
		t.Errorf("manifests %d blobs %d, want 5 and 9", res.Manifests, res.Blobs)
	}
	for i, im := range res.Images {
		d, err := remote.Head(mustRef(t, im.Ref))
		if err != nil {
			t.Fatal(err)
		}
		if d.Digest.String() != im.Digest || im.Reduced {
			t.Errorf("image %d %s: digest %s, source %s", i, im.Ref, im.Digest, d.Digest)
		}
	}
	_ = refs
	v, err := Verify(out, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Checksum || v.SHA256 != res.SHA256 || len(v.Contents.Images) != 3 || len(v.Contents.Packages) != 1 || v.Contents.Blobs != 9 {
		t.Errorf("verify: %+v %+v", v, v.Contents)
	}
	if len(v.Contents.Warnings) > 0 {
		t.Errorf("warnings: %v", v.Contents.Warnings)
	}
	st, _ := os.Stat(out)
	if st.Size() != res.Bytes {
		t.Errorf("size %d, result says %d", st.Size(), res.Bytes)
	}
	// Archive size stays within 1% (+ 10 KiB of metadata) of the blobs.
	if float64(res.Bytes) > float64(res.BlobBytes)*1.01+10240 {
		t.Errorf("archive %d bytes for %d bytes of blobs", res.Bytes, res.BlobBytes)
	}
}

func TestPackageReducedIndex(t *testing.T) {
	_, res, _ := packageFixture(t, t.TempDir(), []string{"linux/arm64"})
	var found bool
	for _, im := range res.Images {
		if strings.HasSuffix(im.Ref, "multi:v2") {
			found = true
			if !im.Reduced || im.Digest == im.SourceDigest {
				t.Errorf("reduced index: %+v", im)
			}
		}
	}
	if !found || res.Manifests != 4 {
		t.Errorf("manifests %d (want 4), %+v", res.Manifests, res.Images)
	}
	host := startRegistry(t)
	_, idx := pushFixture(t, host)
	_, err := Package(ctx(t), &bytes.Buffer{}, PackageOptions{Images: []Image{{Ref: idx, Platforms: []string{"linux/s390x"}}}})
	if err == nil || !strings.Contains(err.Error(), "offers none of the platforms linux/s390x (it offers linux/amd64, linux/arm64/v8)") {
		t.Errorf("err = %v", err)
	}
}

func TestPackageDeterministic(t *testing.T) {
	host := startRegistry(t)
	imgs, idx := pushFixture(t, host)
	var sums []string
	inputs := [][]Image{
		{{Ref: idx}, {Ref: imgs[1]}, {Ref: imgs[0], Bundle: true}},
		{{Ref: imgs[0], Bundle: true}, {Ref: idx}, {Ref: imgs[1]}},
	}
	for _, in := range inputs {
		out := filepath.Join(t.TempDir(), "a.tgz")
		res, err := WriteFile(ctx(t), out, PackageOptions{
			// a different order of the input gives the same bytes
			Images: in,
			Files:  []File{{Path: "op/1.0.0/manifest.yaml", Data: []byte(testManifest)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, res.SHA256)
	}
	if sums[0] != sums[1] {
		t.Errorf("two runs differ: %s %s", sums[0], sums[1])
	}
}
