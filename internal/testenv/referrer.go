package testenv

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// AttachReferrer pushes data as an OCI artifact of artifactType (the
// empty config, one layer of that media type) whose subject is
// repo@subject, as SBOM and VEX tools attach them (OCI image spec,
// "Guidelines for artifact usage"), with opts for every request; it returns
// the referrer's digest. On a registry without the referrers API
// go-containerregistry adds it to the referrers tag schema index. A
// registry that refuses a write fails t.
func AttachReferrer(t testing.TB, repo name.Repository, subject v1.Descriptor, artifactType string, data []byte, opts ...remote.Option) v1.Hash {
	t.Helper()
	cfg := static.NewLayer([]byte("{}"), "application/vnd.oci.empty.v1+json")
	layer := static.NewLayer(data, types.MediaType(artifactType))
	for _, l := range []v1.Layer{cfg, layer} {
		if err := remote.WriteLayer(repo, l, opts...); err != nil {
			t.Fatal(err)
		}
	}
	desc := func(l v1.Layer) map[string]any {
		d, _ := l.Digest()
		s, _ := l.Size()
		mt, _ := l.MediaType()
		return map[string]any{"mediaType": mt, "digest": d.String(), "size": s}
	}
	raw, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     types.OCIManifestSchema1,
		"artifactType":  artifactType,
		"config":        desc(cfg),
		"layers":        []any{desc(layer)},
		"subject":       map[string]any{"mediaType": subject.MediaType, "digest": subject.Digest.String(), "size": subject.Size},
	})
	h, _, _ := v1.SHA256(bytes.NewReader(raw))
	if err := remote.Put(repo.Digest(h.String()), rawManifest{raw, types.OCIManifestSchema1}, opts...); err != nil {
		t.Fatal(err)
	}
	return h
}

// rawManifest is a manifest pushed as its bytes.
type rawManifest struct {
	data []byte
	mt   types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.data, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mt, nil }
