package archive

import (
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// signTag pushes a random image as the cosign signature tag of ref's
// digest d (sha256-<hex>.sig) in ref's repository and returns its digest.
func signTag(t *testing.T, ref string, d v1.Hash) v1.Hash {
	t.Helper()
	sig, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag := mustRef(t, ref).Context().Tag(d.Algorithm + "-" + d.Hex + ".sig")
	if err := remote.Write(tag, sig); err != nil {
		t.Fatal(err)
	}
	h, _ := sig.Digest()
	return h
}

// TestPackageSignaturesReduced: the signature tags of an image index and
// of its platform children travel with it, as KindSignature entries; with
// --platforms the reduced index has a new digest, so its own signature is
// left out (a warning says so) and the kept child's stay: its .sig tag and
// its referrer, which only the referrers API lists. The same input gives
// the same bytes.
func TestPackageSignaturesReduced(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	_, idx := pushFixture(t, host)
	desc, err := remote.Get(mustRef(t, idx))
	if err != nil {
		t.Fatal(err)
	}
	im, _ := v1.ParseIndexManifest(strings.NewReader(string(desc.Manifest)))
	signTag(t, idx, desc.Digest)
	var arm v1.Hash
	for _, m := range im.Manifests {
		signTag(t, idx, m.Digest)
		if m.Platform.Architecture == "arm64" {
			arm = m.Digest
		}
	}
	// A referrer of the arm64 child (a per-platform Sigstore bundle, say),
	// listed by the referrers API only.
	ref, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	armDesc := v1.Descriptor{MediaType: types.DockerManifestSchema2, Digest: arm, Size: 1}
	for _, m := range im.Manifests {
		if m.Digest == arm {
			armDesc = m
		}
	}
	referrer := mutate.Subject(mutate.MediaType(ref, types.OCIManifestSchema1), armDesc).(v1.Image)
	rd, _ := referrer.Digest()
	if err := remote.Write(mustRef(t, idx).Context().Digest(rd.String()), referrer); err != nil {
		t.Fatal(err)
	}
	subjects := func(res *PackageResult) map[string]string {
		out := map[string]string{}
		for _, r := range res.Images {
			if r.Subject != "" {
				out[r.Subject] = r.Ref
			}
		}
		return out
	}

	whole, err := WriteFile(ctx(t), filepath.Join(t.TempDir(), "a.tgz"), PackageOptions{Images: []Image{{Ref: idx}}, Signatures: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := subjects(whole); whole.Signatures != 4 || s[desc.Digest.String()] == "" || len(whole.Warnings) != 0 {
		t.Errorf("whole index: %d signatures %v, warnings %v", whole.Signatures, s, whole.Warnings)
	}
	again, err := WriteFile(ctx(t), filepath.Join(t.TempDir(), "b.tgz"), PackageOptions{Images: []Image{{Ref: idx}}, Signatures: true})
	if err != nil || again.SHA256 != whole.SHA256 {
		t.Errorf("again: %v, %s vs %s", err, again.SHA256, whole.SHA256)
	}

	out := filepath.Join(t.TempDir(), "arm.tgz")
	reduced, err := WriteFile(ctx(t), out, PackageOptions{Images: []Image{{Ref: idx, Platforms: []string{"linux/arm64"}}}, Signatures: true})
	if err != nil {
		t.Fatal(err)
	}
	s := subjects(reduced)
	if reduced.Signatures != 2 || s[arm.String()] == "" {
		t.Errorf("reduced: %d signatures %v", reduced.Signatures, s)
	}
	if len(reduced.Warnings) != 1 || !strings.Contains(reduced.Warnings[0], "signatures of its source digest "+desc.Digest.String()+" are not carried") {
		t.Errorf("warnings: %v", reduced.Warnings)
	}

	// Pushed beside the reduced index, by tag.
	dst := startRegistry(t)
	pr, err := Push(ctx(t), out, PushOptions{Map: func(src string) (name.Reference, error) {
		return name.ParseReference(strings.Replace(src, host, dst, 1))
	}, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Signatures != 2 || pr.SignaturesPut != 2 || len(pr.Images) != 1 {
		t.Errorf("push: %+v", pr)
	}
	tag := dst + "/example/multi:" + arm.Algorithm + "-" + arm.Hex + ".sig"
	if _, err := remote.Head(mustRef(t, tag)); err != nil {
		t.Errorf("%s at the destination: %v", tag, err)
	}
}
