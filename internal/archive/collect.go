package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// image reads the manifest (and, for an index, every child manifest) of one
// image and records its blobs. It returns the index.json entry.
func (c *collected) image(ctx context.Context, o PackageOptions, im Image) (v1.Descriptor, ImageResult, error) {
	if im.Built != nil {
		d, res, err := c.built(im.Built, im.Ref)
		if err == nil {
			d.Annotations = imageAnnotations(im)
		}
		return d, res, err
	}
	ref, err := o.Read(im.Ref)
	if err != nil {
		return v1.Descriptor{}, ImageResult{}, err
	}
	raw, mt, h, err := c.get(ctx, ref)
	if err != nil {
		return v1.Descriptor{}, ImageResult{}, err
	}
	res := ImageResult{Ref: im.Ref, SourceDigest: h.String(), MediaType: string(mt)}
	if mt.IsIndex() && len(im.Platforms) > 0 {
		if raw, err = reduceIndex(raw, im.Platforms); err != nil {
			return v1.Descriptor{}, ImageResult{}, err
		}
		res.Reduced = true
	}
	d, err := c.add(ctx, ref.Context(), raw, mt, im.Ref, 0)
	if err != nil {
		return v1.Descriptor{}, ImageResult{}, err
	}
	res.Digest = d.Digest.String()
	if res.Digest == res.SourceDigest {
		res.Reduced = false
	}
	d.Annotations = imageAnnotations(im)
	if res.Reduced {
		d.Annotations[AnnotationSourceDigest] = res.SourceDigest
	}
	return d, res, nil
}

// imageAnnotations are the index.json annotations of im's entry: its
// name, source, kind (bundle or image), tag and artifacts.
func imageAnnotations(im Image) map[string]string {
	a := map[string]string{AnnotationRefName: im.Ref, AnnotationSource: im.Ref, AnnotationKind: KindImage}
	if im.Bundle {
		a[AnnotationKind] = KindBundle
	}
	if im.Tag != "" {
		a[AnnotationTag] = im.Tag
	}
	if len(im.Artifacts) > 0 {
		names := append([]string(nil), im.Artifacts...)
		sort.Strings(names)
		a[AnnotationArtifacts] = strings.Join(slices.Compact(names), ",")
	}
	return a
}

// catalog records the manifest and blobs of an OCI catalog, read from
// its image, and returns its index.json entry (KindCatalog, named
// CatalogRef).
func (c *collected) catalog(cat Catalog) (v1.Descriptor, ImageResult, error) {
	ref := CatalogRef(cat.Cluster)
	d, res, err := c.built(cat.Image, ref)
	if err != nil {
		return v1.Descriptor{}, ImageResult{}, err
	}
	d.Annotations = map[string]string{
		AnnotationRefName: ref, AnnotationSource: ref, AnnotationKind: KindCatalog, AnnotationCluster: cat.Cluster,
	}
	if len(cat.Locations) > 0 {
		locs := slices.Sorted(slices.Values(cat.Locations))
		d.Annotations[AnnotationCatalogLocations] = strings.Join(slices.Compact(locs), ",")
	}
	return d, res, nil
}

// built records the manifest and blobs of img, an image made here (an OCI
// catalog, Image.Built), named ref, and returns its descriptor (no
// annotations) and result.
func (c *collected) built(img v1.Image, ref string) (v1.Descriptor, ImageResult, error) {
	raw, err := img.RawManifest()
	if err != nil {
		return v1.Descriptor{}, ImageResult{}, err
	}
	m, err := img.Manifest()
	if err != nil {
		return v1.Descriptor{}, ImageResult{}, err
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return v1.Descriptor{}, ImageResult{}, err
	}
	h, n, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return v1.Descriptor{}, ImageResult{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.manifests[h.String()] = raw
	c.depth[h.String()] = 0
	c.blobs[m.Config.Digest.String()] = blobInfo{desc: m.Config, from: ref, open: func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(cfg)), nil
	}}
	for _, l := range m.Layers {
		layer, err := img.LayerByDigest(l.Digest)
		if err != nil {
			return v1.Descriptor{}, ImageResult{}, err
		}
		c.blobs[l.Digest.String()] = blobInfo{desc: l, from: ref, open: layer.Compressed}
	}
	mt := m.MediaType
	if mt == "" {
		mt = types.OCIManifestSchema1
	}
	d := v1.Descriptor{MediaType: mt, Digest: h, Size: n}
	return d, ImageResult{Ref: ref, Digest: h.String(), SourceDigest: h.String(), MediaType: string(mt)}, nil
}

// get reads the manifest ref names: from the cache when ref is a digest
// it holds, else from the registry (and then into the cache). It returns the
// raw bytes, their media type and digest.
func (c *collected) get(ctx context.Context, ref name.Reference) ([]byte, types.MediaType, v1.Hash, error) {
	if dr, ok := ref.(name.Digest); ok && c.cache != nil {
		if h, err := v1.NewHash(dr.DigestStr()); err == nil {
			if raw, mt, ok := c.cache.manifest(h, Limits{}.withDefaults().Manifest); ok {
				return raw, mt, h, nil
			}
		}
	}
	desc, err := c.puller.Get(ctx, ref)
	if err != nil {
		return nil, "", v1.Hash{}, err
	}
	c.cacheFailed(c.cache.putManifest(desc.Digest, desc.Manifest))
	return desc.Manifest, manifestMediaType(desc.Manifest, desc.MediaType), desc.Digest, nil
}

// add records a manifest (raw bytes) and what it names, recursively.
func (c *collected) add(ctx context.Context, repo name.Repository, raw []byte, mt types.MediaType, from string, depth int) (v1.Descriptor, error) {
	h, n, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return v1.Descriptor{}, err
	}
	d := v1.Descriptor{MediaType: mt, Digest: h, Size: n}
	c.mu.Lock()
	_, done := c.manifests[h.String()]
	c.manifests[h.String()] = raw
	if old, ok := c.depth[h.String()]; !ok || depth < old {
		c.depth[h.String()] = depth
	}
	c.mu.Unlock()
	if done && depth > 0 {
		return d, nil
	}
	switch {
	case mt.IsIndex():
		var idx v1.IndexManifest
		if err := json.Unmarshal(raw, &idx); err != nil {
			return d, fmt.Errorf("image index %s: %w", h, err)
		}
		for _, child := range idx.Manifests {
			if !child.MediaType.IsIndex() && !child.MediaType.IsImage() {
				// An artifact manifest of unknown kind: keep it as a blob.
				c.blob(child, repo, from)
				continue
			}
			craw, cmt, _, err := c.get(ctx, repo.Digest(child.Digest.String()))
			if err != nil {
				return d, fmt.Errorf("child manifest %s: %w", child.Digest, err)
			}
			if _, err := c.add(ctx, repo, craw, cmt, from, depth+1); err != nil {
				return d, err
			}
		}
	case mt.IsImage():
		var m v1.Manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			return d, fmt.Errorf("image manifest %s: %w", h, err)
		}
		c.blob(m.Config, repo, from)
		for _, l := range m.Layers {
			c.blob(l, repo, from)
		}
	default:
		return d, fmt.Errorf("media type %s is neither an image nor an image index", mt)
	}
	return d, nil
}

func (c *collected) blob(d v1.Descriptor, repo name.Repository, from string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.blobs[d.Digest.String()]; !ok {
		c.blobs[d.Digest.String()] = blobInfo{desc: d, repo: repo, from: from}
	}
}

// reduceIndex keeps the children of an image index that match platforms
// (and the attestation manifests that refer to a kept child); every other
// field is kept as it was.
func reduceIndex(raw []byte, platforms []string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	var children []json.RawMessage
	if err := json.Unmarshal(doc["manifests"], &children); err != nil {
		return nil, err
	}
	var kept []json.RawMessage
	keptDigests := map[string]bool{}
	var offered []string
	type child struct {
		Digest      string            `json:"digest"`
		Platform    *v1.Platform      `json:"platform"`
		Annotations map[string]string `json:"annotations"`
	}
	parsed := make([]child, len(children))
	for i, c := range children {
		if err := json.Unmarshal(c, &parsed[i]); err != nil {
			return nil, err
		}
		p := parsed[i].Platform
		if p == nil || p.OS == "unknown" {
			continue
		}
		offered = append(offered, platformString(p))
		if matchPlatform(p, platforms) {
			kept = append(kept, c)
			keptDigests[parsed[i].Digest] = true
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("image index offers none of the platforms %s (it offers %s)", strings.Join(platforms, ", "), strings.Join(offered, ", "))
	}
	for i, c := range children {
		if ref := parsed[i].Annotations["vnd.docker.reference.digest"]; ref != "" && keptDigests[ref] {
			kept = append(kept, c)
		}
	}
	out, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	doc["manifests"] = out
	return json.Marshal(doc)
}

func platformString(p *v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// matchPlatform reports whether p is one of want (os/arch[/variant]; no
// variant matches any).
func matchPlatform(p *v1.Platform, want []string) bool {
	for _, w := range want {
		parts := strings.Split(w, "/")
		if len(parts) < 2 || parts[0] != p.OS || parts[1] != p.Architecture {
			continue
		}
		if len(parts) == 2 || parts[2] == p.Variant {
			return true
		}
	}
	return false
}
