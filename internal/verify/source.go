package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-publish/publish/internal/archive"
)

// images is where the Verifier reads an image and its signatures: a
// registry (remoteImages) or the OCI layout of an offline archive
// (archiveImages). A missing manifest or blob is an error isNotFound
// accepts.
type images interface {
	// get returns the descriptor of ref and, for an image index, its
	// manifest.
	get(ref name.Reference) (v1.Descriptor, *v1.IndexManifest, error)
	// referrers lists the referrers of d (the OCI referrers API's
	// answer, or the referrers tag schema's).
	referrers(d name.Digest) (*v1.IndexManifest, error)
	// image reads the image manifest ref (a .sig tag, a referrer).
	image(ref name.Reference) (v1.Image, error)
}

// remoteImages reads a registry with opts (credentials, TLS, context).
type remoteImages []remote.Option

func (o remoteImages) get(ref name.Reference) (v1.Descriptor, *v1.IndexManifest, error) {
	desc, err := remote.Get(ref, o...)
	if err != nil {
		return v1.Descriptor{}, nil, err
	}
	if !desc.MediaType.IsIndex() {
		return desc.Descriptor, nil, nil
	}
	im, err := v1.ParseIndexManifest(bytes.NewReader(desc.Manifest))
	return desc.Descriptor, im, err
}

func (o remoteImages) referrers(d name.Digest) (*v1.IndexManifest, error) {
	idx, err := remote.Referrers(d, o...)
	if err != nil {
		return nil, err
	}
	return idx.IndexManifest()
}

func (o remoteImages) image(ref name.Reference) (v1.Image, error) { return remote.Image(ref, o...) }

// archiveImages reads the OCI layout of an archive verified by
// archive.Verify: its manifests, its index.json entries by source
// reference, and the blobs of its signature entries
// (Contents.SignatureBlobs). Nothing is read from a registry.
type archiveImages struct {
	c *archive.Contents
	// byRef maps the source reference of each entry (an image, a
	// signature tag, a referrer by digest) to its descriptor.
	byRef map[string]v1.Descriptor
}

func newArchiveImages(c *archive.Contents) *archiveImages {
	a := &archiveImages{c: c, byRef: map[string]v1.Descriptor{}}
	for _, e := range c.Images {
		if e.Catalog == "" {
			a.byRef[e.Ref] = e.Desc
		}
	}
	return a
}

// notFound is the error of a manifest or blob the archive does not hold,
// as a registry answers it.
func notFound() error { return &transport.Error{StatusCode: http.StatusNotFound} }

func (a *archiveImages) get(ref name.Reference) (v1.Descriptor, *v1.IndexManifest, error) {
	d, ok := a.byRef[ref.String()]
	if !ok {
		d, ok = a.byRef[ref.Name()]
	}
	if !ok {
		if h, err := v1.NewHash(ref.Identifier()); err == nil && a.c.Manifests[h.String()] != nil {
			m := a.c.Manifests[h.String()]
			d, ok = v1.Descriptor{Digest: h, MediaType: m.MediaType, Size: int64(len(m.Raw))}, true
		}
	}
	m := a.c.Manifests[d.Digest.String()]
	if !ok || m == nil {
		return v1.Descriptor{}, nil, notFound()
	}
	if !m.MediaType.IsIndex() {
		return d, nil, nil
	}
	im, err := v1.ParseIndexManifest(bytes.NewReader(m.Raw))
	return d, im, err
}

// referrers lists the signature entries of the archive whose subject is
// d and whose manifest names d as its subject (OCI referrers), with the
// artifact type a registry derives: the manifest's, else its config's
// media type.
func (a *archiveImages) referrers(d name.Digest) (*v1.IndexManifest, error) {
	out := &v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}
	for _, e := range a.c.Images {
		m := a.c.Manifests[e.Desc.Digest.String()]
		if e.Subject != d.DigestStr() || m == nil {
			continue
		}
		var rm struct {
			ArtifactType string            `json:"artifactType"`
			Config       v1.Descriptor     `json:"config"`
			Subject      *v1.Descriptor    `json:"subject"`
			Annotations  map[string]string `json:"annotations"`
			MediaType    types.MediaType   `json:"mediaType"`
		}
		if json.Unmarshal(m.Raw, &rm) != nil || rm.Subject == nil || rm.Subject.Digest.String() != d.DigestStr() {
			continue
		}
		at := rm.ArtifactType
		if at == "" {
			at = string(rm.Config.MediaType)
		}
		out.Manifests = append(out.Manifests, v1.Descriptor{MediaType: m.MediaType, Digest: e.Desc.Digest, Size: int64(len(m.Raw)), ArtifactType: at, Annotations: rm.Annotations})
	}
	return out, nil
}

func (a *archiveImages) image(ref name.Reference) (v1.Image, error) {
	d, _, err := a.get(ref)
	if err != nil {
		return nil, err
	}
	m := a.c.Manifests[d.Digest.String()]
	if !m.MediaType.IsImage() {
		return nil, notFound()
	}
	mf, err := v1.ParseManifest(bytes.NewReader(m.Raw))
	if err != nil {
		return nil, err
	}
	return partial.CompressedToImage(&archiveImage{a: a, raw: m.Raw, mt: m.MediaType, config: mf.Config, layers: mf.Layers})
}

// archiveImage is an image manifest of the archive whose blobs are those
// archive.Verify kept (partial.CompressedImageCore).
type archiveImage struct {
	a      *archiveImages
	raw    []byte
	mt     types.MediaType
	config v1.Descriptor
	layers []v1.Descriptor
}

func (i *archiveImage) RawManifest() ([]byte, error)        { return i.raw, nil }
func (i *archiveImage) MediaType() (types.MediaType, error) { return i.mt, nil }

func (i *archiveImage) RawConfigFile() ([]byte, error) {
	if data, ok := i.a.c.SignatureBlobs[i.config.Digest.String()]; ok {
		return data, nil
	}
	if i.config.Data != nil {
		return i.config.Data, nil
	}
	return nil, notFound()
}

func (i *archiveImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	for _, l := range i.layers {
		if l.Digest == h {
			return &archiveLayer{d: l, data: i.a.c.SignatureBlobs[h.String()]}, nil
		}
	}
	return nil, notFound()
}

// archiveLayer is a blob of a signature entry (partial.CompressedLayer):
// data is what archive.Verify kept, nil when it kept none.
type archiveLayer struct {
	d    v1.Descriptor
	data []byte
}

func (l *archiveLayer) Digest() (v1.Hash, error)            { return l.d.Digest, nil }
func (l *archiveLayer) Size() (int64, error)                { return l.d.Size, nil }
func (l *archiveLayer) MediaType() (types.MediaType, error) { return l.d.MediaType, nil }

// Compressed reads the blob. Errors: the archive does not hold it, or
// holds it larger than archive.MaxSignatureBlob (not kept): no verdict on
// the signature, as a registry that did not give it.
func (l *archiveLayer) Compressed() (io.ReadCloser, error) {
	if l.data == nil {
		return nil, fmt.Errorf("blob %s is not in the archive (a differential archive's base holds it) or is larger than %d bytes", l.d.Digest, archive.MaxSignatureBlob)
	}
	return io.NopCloser(bytes.NewReader(l.data)), nil
}
