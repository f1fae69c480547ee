package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// DigestsFile is the digest list every archive carries, after index.json
// (and FILE.digests.json beside it: DigestsPath): what a site holds once it
// pushed the archive, for `publish package --base-archive`.
const DigestsFile = "digests.json"

// AnnotationBase, on index.json itself, names the digest lists a
// differential archive was made against (comma-separated
// "sha256:<hex of the list> <file name>").
const AnnotationBase = "io.operator-publish.base"

// maxDigestsBytes caps digests.json (it lists every blob of a site).
const maxDigestsBytes = 64 << 20

// DigestList is the content of digests.json (JSON, schemaVersion 1): the
// images, manifests and blobs a site holds once it pushed the archive and
// the archives it was made against.
type DigestList struct {
	SchemaVersion int `json:"schemaVersion"`
	// Base names the digest lists this archive was made against (none: a
	// full archive).
	Base []BaseRef `json:"base,omitempty"`
	// Images are the archive's own index.json entries (images and
	// signatures; OCI catalogs are not listed).
	Images []ListedImage `json:"images"`
	// BaseImages are the images the bases promised (theirs and their
	// bases'): push of this archive checks they are at the destination.
	BaseImages []ListedImage `json:"baseImages,omitempty"`
	// Manifests are the digests of every manifest, the bases' included.
	Manifests []string `json:"manifests"`
	// Blobs are every config and layer, the bases' included (Base: not
	// stored in this archive).
	Blobs []ListedBlob `json:"blobs"`
}

// BaseRef names one digest list: the sha256 (hex) of its bytes, and the
// file it was read from.
type BaseRef struct {
	SHA256 string `json:"sha256"`
	File   string `json:"file"`
}

// ListedImage is one image of a digest list: its source reference, the
// destination tag of a digest-pinned bundle ("" otherwise), its digest.
type ListedImage struct {
	Ref    string `json:"ref"`
	Tag    string `json:"tag,omitempty"`
	Digest string `json:"digest"`
}

func (l ListedImage) key() string { return l.Ref + "\x00" + l.Tag + "\x00" + l.Digest }

// ListedBlob is one config or layer: digest, size in bytes, the source
// repositories whose images need it, and whether a base holds it (it is
// then not stored in this archive).
type ListedBlob struct {
	Digest string   `json:"digest"`
	Size   int64    `json:"size"`
	Repos  []string `json:"repos,omitempty"`
	Base   bool     `json:"base,omitempty"`
}

// DigestsPath is the digest list written beside an archive: NAME.tgz ->
// NAME.digests.json (the same for a split archive's NAME.parts.json).
func DigestsPath(archive string) string { return stem(archive) + ".digests.json" }

// stem is the archive's path without .tgz (or .tar.gz, .tar).
func stem(p string) string {
	for _, ext := range []string{".tgz", ".tar.gz", ".tar", ".parts.json"} {
		if strings.HasSuffix(p, ext) {
			return strings.TrimSuffix(p, ext)
		}
	}
	return p
}

// Base is what one or more earlier archives hold (their digest lists):
// PackageOptions.Base leaves it out of a differential archive.
type Base struct {
	refs   []BaseRef
	images map[string]ListedImage // by key, theirs and their bases'
	mans   map[string]bool
	blobs  map[string]ListedBlob
}

// LoadBase reads the digest list of each path: a digest list
// (NAME.digests.json), an archive (its digests.json, read from its start;
// an archive without one is read whole), the index of a split archive
// (NAME.parts.json) or its directory. Errors name the file.
func LoadBase(paths []string) (*Base, error) {
	b := &Base{images: map[string]ListedImage{}, mans: map[string]bool{}, blobs: map[string]ListedBlob{}}
	for _, p := range paths {
		raw, err := readDigestList(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		var l DigestList
		if err := json.Unmarshal(raw, &l); err != nil || l.SchemaVersion != 1 {
			return nil, fmt.Errorf("%s: not a digest list (%s, schemaVersion 1): %v", p, DigestsFile, err)
		}
		sum := sha256.Sum256(raw)
		b.refs = append(b.refs, BaseRef{SHA256: hex.EncodeToString(sum[:]), File: filepath.Base(p)})
		for _, im := range append(l.Images, l.BaseImages...) {
			b.images[im.key()] = im
		}
		for _, m := range l.Manifests {
			b.mans[m] = true
		}
		for _, bl := range l.Blobs {
			b.blobs[bl.Digest] = mergeBlob(b.blobs[bl.Digest], bl)
		}
	}
	return b, nil
}

func mergeBlob(a, b ListedBlob) ListedBlob {
	if a.Digest == "" {
		b.Repos = append([]string(nil), b.Repos...)
		return b
	}
	for _, r := range b.Repos {
		if !containsStr(a.Repos, r) {
			a.Repos = append(a.Repos, r)
		}
	}
	sort.Strings(a.Repos)
	a.Base = a.Base && b.Base
	return a
}

func containsStr(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Images are the images the base promised, sorted by reference.
func (b *Base) Images() []ListedImage {
	out := make([]ListedImage, 0, len(b.images))
	for _, k := range sortedKeys(b.images) {
		out = append(out, b.images[k])
	}
	return out
}

func (b *Base) hasBlob(d string) bool { _, ok := b.blobs[d]; return ok }

// name is the AnnotationBase value.
func (b *Base) name() string {
	var s []string
	for _, r := range b.refs {
		s = append(s, "sha256:"+r.SHA256+" "+r.File)
	}
	return strings.Join(s, ",")
}

// leaveOut drops the index.json entries the base holds (same reference,
// tag and digest), with their results (the same positions); OCI catalogs
// stay. left counts those dropped.
func (b *Base) leaveOut(descs []v1.Descriptor, imgs []ImageResult) ([]v1.Descriptor, []ImageResult, int) {
	var kd []v1.Descriptor
	var ki []ImageResult
	for i, d := range descs {
		if d.Annotations[AnnotationKind] != KindCatalog {
			if _, ok := b.images[listed(d).key()]; ok {
				continue
			}
		}
		kd, ki = append(kd, d), append(ki, imgs[i])
	}
	return kd, ki, len(descs) - len(kd)
}

// extend adds the base to an archive's own list: its bases, the images
// they promised, and their manifests and blobs (marked Base unless the
// archive stores them too).
func (b *Base) extend(l DigestList) DigestList {
	l.Base = append([]BaseRef(nil), b.refs...)
	own := map[string]bool{}
	for _, im := range l.Images {
		own[im.key()] = true
	}
	for _, im := range b.Images() {
		if !own[im.key()] {
			l.BaseImages = append(l.BaseImages, im)
		}
	}
	mans := map[string]bool{}
	for _, m := range l.Manifests {
		mans[m] = true
	}
	for m := range b.mans {
		mans[m] = true
	}
	l.Manifests = sortedKeys(mans)
	blobs := map[string]ListedBlob{}
	for _, bl := range l.Blobs {
		blobs[bl.Digest] = bl
	}
	for d, bl := range b.blobs {
		bl.Base = true
		blobs[d] = mergeBlob(blobs[d], bl)
	}
	l.Blobs = l.Blobs[:0]
	for _, d := range sortedKeys(blobs) {
		l.Blobs = append(l.Blobs, blobs[d])
	}
	return l
}

// listed is the digest list entry of an index.json entry.
func listed(d v1.Descriptor) ListedImage {
	ref := d.Annotations[AnnotationSource]
	if ref == "" {
		ref = d.Annotations[AnnotationRefName]
	}
	return ListedImage{Ref: ref, Tag: d.Annotations[AnnotationTag], Digest: d.Digest.String()}
}

// reachable returns the manifests and the configs and layers (with their
// sizes) that the entries need, from the stored manifests.
func (c *collected) reachable(entries []v1.Descriptor) (map[string]bool, map[string]int64) {
	mans, blobs := map[string]bool{}, map[string]int64{}
	var walk func(d string)
	walk = func(d string) {
		if mans[d] {
			return
		}
		mans[d] = true
		var m struct {
			Manifests []v1.Descriptor `json:"manifests"`
			Config    *v1.Descriptor  `json:"config"`
			Layers    []v1.Descriptor `json:"layers"`
		}
		if json.Unmarshal(c.manifests[d], &m) != nil {
			return
		}
		for _, ch := range m.Manifests {
			if ch.MediaType.IsIndex() || ch.MediaType.IsImage() {
				walk(ch.Digest.String())
			} else {
				blobs[ch.Digest.String()] = ch.Size
			}
		}
		if m.Config != nil {
			blobs[m.Config.Digest.String()] = m.Config.Size
		}
		for _, l := range m.Layers {
			blobs[l.Digest.String()] = l.Size
		}
	}
	for _, e := range entries {
		walk(e.Digest.String())
	}
	return mans, blobs
}

// digestList is the list of what the entries (OCI catalogs left out) need.
func (c *collected) digestList(entries []v1.Descriptor) DigestList {
	l := DigestList{SchemaVersion: 1, Images: []ListedImage{}}
	repos := map[string]map[string]bool{}
	mans := map[string]bool{}
	for _, e := range entries {
		if e.Annotations[AnnotationKind] == KindCatalog {
			continue
		}
		im := listed(e)
		l.Images = append(l.Images, im)
		repo := ""
		if r, err := name.ParseReference(im.Ref, name.WeakValidation); err == nil {
			repo = r.Context().Name()
		}
		m, b := c.reachable([]v1.Descriptor{e})
		for d := range m {
			mans[d] = true
		}
		for d := range b {
			if repos[d] == nil {
				repos[d] = map[string]bool{}
			}
			if repo != "" {
				repos[d][repo] = true
			}
		}
	}
	_, sizes := c.reachable(entries)
	l.Manifests = sortedKeys(mans)
	l.Blobs = []ListedBlob{}
	for _, d := range sortedKeys(repos) {
		l.Blobs = append(l.Blobs, ListedBlob{Digest: d, Size: sizes[d], Repos: sortedKeys(repos[d])})
	}
	return l
}

// errStop ends a walk early.
var errStop = errors.New("stop")

// readDigestList returns the bytes of the digest list at p (see LoadBase).
func readDigestList(p string) ([]byte, error) {
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		idx, err := findIndex(p)
		if err != nil {
			return nil, err
		}
		p = idx
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 1)
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if head[0] == '{' {
		data, err := io.ReadAll(io.LimitReader(f, maxDigestsBytes+1))
		if err != nil {
			return nil, err
		}
		var probe struct {
			Parts []Part `json:"parts"`
		}
		if json.Unmarshal(data, &probe) == nil && len(probe.Parts) > 0 {
			// A split archive: its first part starts with digests.json.
			return readDigestList(filepath.Join(filepath.Dir(p), probe.Parts[0].Name))
		}
		return data, nil
	}
	var found []byte
	err = Walk(f, Limits{}, func(e Entry, body io.Reader) error {
		switch e.Kind {
		case EntryDigests:
			data, err := io.ReadAll(body)
			if err != nil {
				return err
			}
			found = data
			return errStop
		case EntryBlob:
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	if found != nil {
		return found, nil
	}
	// An archive written before digest lists: read it whole.
	vr, err := Verify(p, Limits{}, nil)
	if err != nil {
		return nil, err
	}
	c := &collected{manifests: map[string][]byte{}}
	for d, m := range vr.Contents.Manifests {
		c.manifests[d] = m.Raw
	}
	var entries []v1.Descriptor
	for _, im := range vr.Contents.Images {
		entries = append(entries, im.Desc)
	}
	return json.Marshal(c.digestList(entries))
}
