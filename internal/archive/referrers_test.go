package archive

import (
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/testenv"
)

// TestPackageCarriesSBOMAndVEX: an image index whose index and first
// platform child each have an SPDX SBOM referrer (the index's is empty)
// and an OpenVEX referrer travels with them through package and push:
// the archive holds the four as signature entries, and the site's
// referrers API lists them for the index and the child.
func TestPackageCarriesSBOMAndVEX(t *testing.T) {
	newReg := func() string {
		s := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	host := newReg()
	_, idx := pushFixture(t, host)
	repo := mustRef(t, idx).Context()
	desc, err := remote.Get(mustRef(t, idx))
	if err != nil {
		t.Fatal(err)
	}
	im, _ := v1.ParseIndexManifest(bytes.NewReader(desc.Manifest))
	subjects := []v1.Descriptor{desc.Descriptor, im.Manifests[0]}
	want := map[string][]string{}
	for _, s := range subjects {
		sbom := []byte(`{"spdxVersion":"SPDX-2.3","SPDXID":"SPDXRef-DOCUMENT","packages":[]}`)
		if s.MediaType.IsIndex() {
			sbom = nil // an empty SBOM
		}
		want[s.Digest.String()] = []string{
			testenv.AttachReferrer(t, repo, s, "application/spdx+json", sbom).String(),
			testenv.AttachReferrer(t, repo, s, "application/vnd.openvex+json", []byte(`{"@context":"https://openvex.dev/ns/v0.2.0","statements":[]}`)).String(),
		}
		slices.Sort(want[s.Digest.String()])
	}

	out := filepath.Join(t.TempDir(), "sbom.tgz")
	res, err := WriteFile(ctx(t), out, PackageOptions{Images: []Image{{Ref: idx}}, Signatures: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Signatures != 4 {
		t.Errorf("archive: %d signature entries, want the 4 referrers: %+v", res.Signatures, res.Images)
	}
	site := newReg()
	if _, err := Push(ctx(t), out, PushOptions{Map: func(src string) (name.Reference, error) {
		return name.ParseReference(strings.Replace(src, host, site, 1))
	}, TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	siteRepo, _ := name.NewRepository(site + "/" + repo.RepositoryStr())
	for subject, w := range want {
		ri, err := remote.Referrers(siteRepo.Digest(subject))
		if err != nil {
			t.Fatal(err)
		}
		rm, _ := ri.IndexManifest()
		var got []string
		for _, m := range rm.Manifests {
			got = append(got, m.Digest.String())
		}
		slices.Sort(got)
		if !slices.Equal(got, w) {
			t.Errorf("referrers of %s at the site: %v, want %v", subject, got, w)
		}
	}
}
