package mirror

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-publish/publish/internal/testenv"
)

// The artifact types of supply-chain documents attached as OCI referrers:
// an SPDX SBOM (SPDX's registered media type) and an OpenVEX document
// (the type tools give it; the OpenVEX specification names none).
const (
	spdxArtifactType    = "application/spdx+json"
	openVEXArtifactType = "application/vnd.openvex+json"
)

// referrerRegistry is a registry the referrers test reads and writes:
// its host, what reaches it, and the mirror options for it as a source
// or a destination.
type referrerRegistry struct {
	host     string
	opts     []remote.Option
	caFile   string
	user     string
	password string
}

// inProcessReferrers is go-containerregistry's registry with the OCI
// referrers API.
func inProcessReferrers(t *testing.T) referrerRegistry {
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return referrerRegistry{host: strings.TrimPrefix(srv.URL, "http://")}
}

// debianReferrers is Debian's docker-registry (TLS, htpasswd), without
// the referrers API: referrers are found through the referrers tag schema.
func debianReferrers(t *testing.T) referrerRegistry {
	r := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, Auth: true})
	return referrerRegistry{host: r.Host, opts: r.Options(), caFile: r.CAFile, user: r.Username, password: r.Password}
}

// referrersByType lists the referrers of d by artifact type (digests,
// sorted), through the referrers API or the tag schema.
func referrersByType(t *testing.T, d name.Digest, opts []remote.Option) map[string][]string {
	t.Helper()
	idx, err := remote.Referrers(d, opts...)
	if err != nil {
		t.Fatalf("referrers of %s: %v", d, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, m := range im.Manifests {
		at := m.ArtifactType
		if at == "" || at == "application/vnd.oci.empty.v1+json" {
			// go-containerregistry's registry lists the config media type:
			// the manifest says.
			raw, err := remote.Get(d.Context().Digest(m.Digest.String()), opts...)
			if err != nil {
				t.Fatal(err)
			}
			var mf struct {
				ArtifactType string `json:"artifactType"`
			}
			json.Unmarshal(raw.Manifest, &mf)
			at = mf.ArtifactType
		}
		out[at] = append(out[at], m.Digest.String())
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// TestMirrorCarriesSBOMAndVEX: an image index whose index and first
// platform child each have an SPDX SBOM referrer and an OpenVEX referrer
// (the index's SBOM is empty: an empty SBOM is no failure) is mirrored
// as publish run mirrors related images; the destination lists the same
// four referrers, by the referrers API (go-containerregistry's registry)
// or the referrers tag schema (Debian's docker-registry, TLS and
// htpasswd, at both ends).
func TestMirrorCarriesSBOMAndVEX(t *testing.T) {
	for _, reg := range []struct {
		name string
		new  func(*testing.T) referrerRegistry
	}{{"in-process", inProcessReferrers}, {"docker-registry", debianReferrers}} {
		t.Run(reg.name, func(t *testing.T) {
			src, dst := reg.new(t), reg.new(t)
			repo, _ := name.NewRepository(src.host + "/vendor/operator")
			idx, err := random.Index(256, 1, 2)
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.WriteIndex(repo.Tag("v1"), idx, src.opts...); err != nil {
				t.Fatal(err)
			}
			im, _ := idx.IndexManifest()
			child := im.Manifests[0].Digest
			subjects := map[v1.Hash]types.MediaType{digestOf(t, idx): types.OCIImageIndex, child: im.Manifests[0].MediaType}
			sbom := []byte(`{"spdxVersion":"SPDX-2.3","dataLicense":"CC0-1.0","SPDXID":"SPDXRef-DOCUMENT","name":"operator","packages":[]}`)
			vex := []byte(`{"@context":"https://openvex.dev/ns/v0.2.0","@id":"https://openvex.dev/docs/example/vex-1","author":"vendor","timestamp":"2026-01-01T00:00:00Z","version":1,"statements":[]}`)
			for s, mt := range subjects {
				doc := sbom
				if mt.IsIndex() {
					doc = nil // an empty SBOM
				}
				testenv.AttachReferrer(t, repo, v1.Descriptor{Digest: s, MediaType: mt, Size: 1}, spdxArtifactType, doc, src.opts...)
				testenv.AttachReferrer(t, repo, v1.Descriptor{Digest: s, MediaType: mt, Size: 1}, openVEXArtifactType, vex, src.opts...)
			}

			// One CA file for both ends (each Debian registry has its CA).
			caFile := filepath.Join(t.TempDir(), "ca.pem")
			var cas []byte
			for _, f := range []string{src.caFile, dst.caFile} {
				if f != "" {
					b, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					cas = append(cas, b...)
				}
			}
			if len(cas) == 0 {
				caFile = ""
			}
			os.WriteFile(caFile, cas, 0o600)
			o := Options{DstRegistry: dst.host + "/mirror", CAFile: caFile,
				Src: Credentials{Username: src.user, Password: src.password},
				Dst: Credentials{Username: dst.user, Password: dst.password}}
			if src.caFile == "" {
				o.PlainHTTPHosts = []string{src.host, dst.host}
			}
			c, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := c.Mirror(context.Background(), []string{repo.Tag("v1").String()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Images) != 1 {
				t.Fatalf("report: %+v", rep.Images)
			}
			dstRepo, _ := name.NewRepository(dst.host + "/mirror/vendor/operator")
			for s := range subjects {
				want := referrersByType(t, repo.Digest(s.String()), src.opts)
				got := referrersByType(t, dstRepo.Digest(s.String()), dst.opts)
				if len(want[spdxArtifactType]) != 1 || len(want[openVEXArtifactType]) != 1 {
					t.Fatalf("source referrers of %s: %v", s, want)
				}
				for _, at := range []string{spdxArtifactType, openVEXArtifactType} {
					if !slices.Equal(got[at], want[at]) {
						t.Errorf("%s referrers of %s at the destination: %v, want %v", at, s, got[at], want[at])
					}
				}
				// The report names what it copied: the referrers (API), or
				// the referrers tag schema index that lists them.
				listed := rep.Images[0].SignatureDigests
				if !slices.Contains(listed, want[spdxArtifactType][0]) || !slices.Contains(listed, want[openVEXArtifactType][0]) {
					d, err := remote.Head(dstRepo.Tag(s.Algorithm+"-"+s.Hex), dst.opts...)
					if err != nil || !slices.Contains(listed, d.Digest.String()) {
						t.Errorf("report lists neither the referrers of %s nor its tag schema index: %v (%v)", s, listed, err)
					}
				}
			}
		})
	}
}
