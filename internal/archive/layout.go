package archive

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/registry"
)

// IndexEntry is one image of an archive, from index.json.
type IndexEntry struct {
	Ref    string // source reference (AnnotationSource)
	Tag    string // destination tag for a digest-pinned bundle, else ""
	Bundle bool
	// Catalog is the cluster of an OCI catalog entry (KindCatalog), ""
	// for an image.
	Catalog      string
	SourceDigest string // set when the index was reduced (--platforms)
	// Subject is the digest a signature entry (KindSignature) signs; ""
	// for an image or an OCI catalog.
	Subject string
	Desc    v1.Descriptor
}

// CatalogLocations are the REGISTRY/REPOSITORY locations an OCI catalog
// entry's Artifacts name as its catalog's state records them
// (AnnotationCatalogLocations), nil for none or an image.
func (e IndexEntry) CatalogLocations() []string {
	v := e.Desc.Annotations[AnnotationCatalogLocations]
	if e.Catalog == "" || v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// Artifacts are the artifacts whose packaged versions need the image of
// an entry (AnnotationArtifacts), nil when the entry names none (a
// signature, an OCI catalog, or an archive written before the annotation).
func (e IndexEntry) Artifacts() []string {
	v := e.Desc.Annotations[AnnotationArtifacts]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// Manifest is an image manifest or index stored in an archive.
type Manifest struct {
	Raw       []byte
	MediaType types.MediaType
	Children  []v1.Descriptor // index: child manifests; image: config and layers
}

// Contents is what a walk of an archive found: the images, their manifests,
// which blobs each image needs, and the PackageManifests.
type Contents struct {
	Images    []IndexEntry
	Manifests map[string]*Manifest // by digest
	// Owners maps a digest (manifest or blob) to the index.json entries
	// (positions in Images) whose image needs it.
	Owners   map[string][]int
	Packages []File
	// ChartClusters are the files below packages/ChartClustersDir: what
	// each cluster renders its charts with (paths relative to that
	// directory; see ChartClustersDir), not PackageManifests.
	ChartClusters []File
	// Trust are the files under trust/ (TrustDir), paths relative to it.
	Trust []File
	// Annotations are index.json's own annotations.
	Annotations map[string]string
	// Blobs and BlobBytes count configs and layers (each once).
	Blobs     int
	BlobBytes int64
	Warnings  []string
	// Digests is the archive's digests.json (nil in an archive written
	// before digest lists).
	Digests *DigestList
	// BaseBlobs are the configs and layers the archive's manifests name
	// and its base holds (not stored: a differential archive), with the
	// source repositories the base's images had them in.
	BaseBlobs map[string][]string
	// SignatureBlobs are the configs and layers of the signature entries
	// (KindSignature) of at most MaxSignatureBlob bytes each, by digest:
	// the Sigstore bundles and .sig payloads that publish verify checks
	// offline (filled by Verify only).
	SignatureBlobs map[string][]byte

	layout    bool
	wantMan   map[string]bool
	wantBlob  map[string]int64
	seenBlob  map[string]bool
	lim       Limits
	indexSeen bool
}

// scanner walks an archive keeping its metadata and hands every config and
// layer to blob (nil: drain and verify only).
type scanner struct {
	c    *Contents
	blob func(e Entry, body io.Reader, owners []int) error
}

func newContents(lim Limits) *Contents {
	return &Contents{
		Manifests: map[string]*Manifest{}, Owners: map[string][]int{}, BaseBlobs: map[string][]string{},
		wantMan: map[string]bool{}, wantBlob: map[string]int64{}, seenBlob: map[string]bool{},
		lim: lim.withDefaults(),
	}
}

func (s *scanner) visit(e Entry, body io.Reader) error {
	c := s.c
	switch e.Kind {
	case EntryLayout:
		data, err := io.ReadAll(body)
		if err != nil {
			return err
		}
		var l struct {
			V string `json:"imageLayoutVersion"`
		}
		if json.Unmarshal(data, &l) != nil || l.V != "1.0.0" {
			return fmt.Errorf("not an OCI image layout file (want {\"imageLayoutVersion\":\"1.0.0\"})")
		}
		c.layout = true
	case EntryIndex:
		data, err := io.ReadAll(body)
		if err != nil {
			return err
		}
		return c.readIndex(data)
	case EntryDigests:
		data, err := io.ReadAll(body)
		if err != nil {
			return err
		}
		var l DigestList
		if err := json.Unmarshal(data, &l); err != nil || l.SchemaVersion != 1 {
			return fmt.Errorf("not a digest list (schemaVersion 1): %v", err)
		}
		c.Digests = &l
		for _, b := range l.Blobs {
			if b.Base {
				c.BaseBlobs[b.Digest] = b.Repos
			}
		}
	case EntryPackage:
		data, err := io.ReadAll(body)
		if err != nil {
			return err
		}
		p := strings.TrimPrefix(e.Name, PackagesDir)
		if rest, ok := strings.CutPrefix(p, ChartClustersDir); ok {
			c.ChartClusters = append(c.ChartClusters, File{Path: rest, Data: data})
			return nil
		}
		if _, err := manifest.Parse(e.Name, data); err != nil {
			return fmt.Errorf("PackageManifest does not parse: %w", err)
		}
		c.Packages = append(c.Packages, File{Path: p, Data: data})
	case EntryTrust:
		data, err := io.ReadAll(body)
		if err != nil {
			return err
		}
		c.Trust = append(c.Trust, File{Path: strings.TrimPrefix(e.Name, TrustDir), Data: data})
	case EntryBlob:
		d := e.Digest.String()
		if !c.indexSeen {
			return errors.New("blob before index.json: the archive was not written by publish package")
		}
		if c.wantMan[d] {
			if e.Size > c.lim.Manifest {
				return fmt.Errorf("manifest of %d bytes: larger than the limit of %d", e.Size, c.lim.Manifest)
			}
			data, err := io.ReadAll(body)
			if err != nil {
				return err
			}
			return c.readManifest(d, data)
		}
		c.seenBlob[d] = true
		if want, ok := c.wantBlob[d]; ok {
			if want != e.Size {
				return fmt.Errorf("%d bytes, but a manifest says %d: %w", e.Size, want, ErrCorrupt)
			}
			c.Blobs++
			c.BlobBytes += e.Size
			if s.blob != nil {
				return s.blob(e, body, c.Owners[d])
			}
			return nil
		}
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s: no manifest names this blob (ignored)", e.Name))
	}
	return nil
}

func (c *Contents) readIndex(data []byte) error {
	var idx v1.IndexManifest
	if err := json.Unmarshal(data, &idx); err != nil {
		return fmt.Errorf("not a valid image index: %v", err)
	}
	c.indexSeen = true
	c.Annotations = idx.Annotations
	for i, d := range idx.Manifests {
		ref := d.Annotations[AnnotationSource]
		if ref == "" {
			ref = d.Annotations[AnnotationRefName]
		}
		if ref == "" {
			return fmt.Errorf("manifests[%d] (%s) has no %s annotation: publish push needs the source reference to map it", i, d.Digest, AnnotationRefName)
		}
		if !d.MediaType.IsIndex() && !d.MediaType.IsImage() {
			return fmt.Errorf("manifests[%d] (%s): media type %q is neither an image nor an image index", i, ref, d.MediaType)
		}
		cluster := ""
		if d.Annotations[AnnotationKind] == KindCatalog {
			if cluster = d.Annotations[AnnotationCluster]; cluster == "" || ref != CatalogRef(cluster) {
				return fmt.Errorf("manifests[%d] (%s): an OCI catalog entry needs %s and the reference name %s", i, ref, AnnotationCluster, CatalogRef("<cluster>"))
			}
		}
		if cluster == "" {
			if err := registry.CheckReference(ref); err != nil {
				return fmt.Errorf("manifests[%d]: reference %q: %v (publish push maps it below the destination prefix)", i, ref, err)
			}
		}
		if t := d.Annotations[AnnotationTag]; t != "" {
			if err := registry.CheckTag(t); err != nil {
				return fmt.Errorf("manifests[%d] (%s): %s: %v", i, ref, AnnotationTag, err)
			}
		}
		subject := ""
		if d.Annotations[AnnotationKind] == KindSignature {
			if subject = d.Annotations[AnnotationSubject]; subject == "" {
				return fmt.Errorf("manifests[%d] (%s): a signature entry needs the %s annotation (the digest it signs)", i, ref, AnnotationSubject)
			}
		}
		c.Images = append(c.Images, IndexEntry{
			Ref: ref, Tag: d.Annotations[AnnotationTag], Bundle: d.Annotations[AnnotationKind] == KindBundle, Catalog: cluster,
			SourceDigest: d.Annotations[AnnotationSourceDigest], Subject: subject, Desc: d,
		})
		k := d.Digest.String()
		c.wantMan[k] = true
		c.Owners[k] = appendOnce(c.Owners[k], i)
	}
	return nil
}

func (c *Contents) readManifest(d string, data []byte) error {
	m := &Manifest{Raw: data}
	var head struct {
		MediaType types.MediaType `json:"mediaType"`
		Manifests []v1.Descriptor `json:"manifests"`
		Config    *v1.Descriptor  `json:"config"`
		Layers    []v1.Descriptor `json:"layers"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("manifest does not parse: %v", err)
	}
	owners := c.Owners[d]
	switch {
	case head.Manifests != nil || head.MediaType.IsIndex():
		m.MediaType = head.MediaType
		if m.MediaType == "" {
			m.MediaType = types.OCIImageIndex
		}
		for _, ch := range head.Manifests {
			m.Children = append(m.Children, ch)
			k := ch.Digest.String()
			if ch.MediaType.IsIndex() || ch.MediaType.IsImage() {
				c.wantMan[k] = true
			} else if _, base := c.BaseBlobs[k]; !base {
				c.wantBlob[k] = ch.Size
			}
			for _, o := range owners {
				c.Owners[k] = appendOnce(c.Owners[k], o)
			}
		}
	case head.Config != nil:
		m.MediaType = head.MediaType
		if m.MediaType == "" {
			m.MediaType = types.OCIManifestSchema1
		}
		for _, ch := range append([]v1.Descriptor{*head.Config}, head.Layers...) {
			m.Children = append(m.Children, ch)
			k := ch.Digest.String()
			if c.seenBlob[k] {
				return fmt.Errorf("names blob %s, which is stored before it: the archive was not written by publish package", k)
			}
			if _, base := c.BaseBlobs[k]; !base {
				c.wantBlob[k] = ch.Size
			}
			for _, o := range owners {
				c.Owners[k] = appendOnce(c.Owners[k], o)
			}
		}
	default:
		return errors.New("neither an image manifest nor an image index")
	}
	c.Manifests[d] = m
	return nil
}

// finish checks that everything named was stored.
func (c *Contents) finish() error {
	var errs []string
	if !c.layout {
		errs = append(errs, "no oci-layout file")
	}
	if !c.indexSeen {
		errs = append(errs, "no index.json")
	}
	for _, d := range sortedKeys(c.wantMan) {
		if c.Manifests[d] == nil {
			errs = append(errs, fmt.Sprintf("manifest %s is missing (or stored after the blobs it names)", d))
		}
	}
	for _, d := range sortedKeys(c.wantBlob) {
		if !c.seenBlob[d] && c.Manifests[d] == nil {
			errs = append(errs, fmt.Sprintf("blob %s is missing", d))
		}
	}
	for _, im := range c.Images {
		if m := c.Manifests[im.Desc.Digest.String()]; m != nil && int64(len(m.Raw)) != im.Desc.Size {
			errs = append(errs, fmt.Sprintf("index.json: %s: size %d, but the manifest has %d bytes", im.Ref, im.Desc.Size, len(m.Raw)))
		}
	}
	if len(errs) > 0 {
		if len(errs) > 10 {
			errs = append(errs[:10], fmt.Sprintf("and %d more", len(errs)-10))
		}
		return &EntryError{Err: fmt.Errorf("incomplete archive: %s", strings.Join(errs, "; "))}
	}
	return nil
}

func appendOnce(s []int, v int) []int {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// VerifyResult is what Verify found.
type VerifyResult struct {
	// SHA256 is the archive's (of a split archive: its index's).
	SHA256 string
	// Parts are those of a split archive, Index its NAME.parts.json
	// (none and "" for one file).
	Parts []Part
	Index string
	// Checksum says whether a FILE.sha256 was there (and matched).
	Checksum bool
	Contents *Contents
}

// Verify reads the archive at path without pushing anything: the whole file
// against FILE.sha256 (when there; a warning otherwise), every entry (see
// Walk), every blob against its digest, and the structure: oci-layout,
// index.json with a source reference per image, every manifest and blob
// they name present with the size they say, every PackageManifest parsing.
// Errors name the archive and the entry.
// It keeps the small blobs of the signature entries in
// Contents.SignatureBlobs.
func Verify(path string, lim Limits, progress *Progress) (*VerifyResult, error) {
	var c *Contents
	keep := func(e Entry, body io.Reader, owners []int) error {
		if e.Size <= MaxSignatureBlob && c.signatureOwned(owners) {
			data, err := io.ReadAll(body)
			if err != nil {
				return err
			}
			c.SignatureBlobs[e.Digest.String()] = data
			return nil
		}
		_, err := io.Copy(io.Discard, body)
		return err
	}
	return walkFileWith(path, lim, progress, keep, func(s *Contents) { c, s.SignatureBlobs = s, map[string][]byte{} }, true)
}

// MaxSignatureBlob is the size, in bytes, of the largest blob of a
// signature entry Verify keeps (a Sigstore bundle or a .sig payload is a
// few KiB; an SBOM referrer may be larger, and is no signature).
const MaxSignatureBlob = 1 << 20

// signatureOwned says whether one of owners (positions in c.Images) is a
// signature entry.
func (c *Contents) signatureOwned(owners []int) bool {
	for _, i := range owners {
		if i < len(c.Images) && c.Images[i].Subject != "" {
			return true
		}
	}
	return false
}

// walkFileWith runs a scanner over the archive at path (one file, or a
// split archive: its NAME.parts.json or the directory holding it), handing
// configs and layers to blob, and checks the checksums (of the file, or
// of each part against the index). start receives the Contents being
// filled before the walk begins. Without hashFile the files' sha256 are
// not computed nor compared (push: the gzip CRC-32 of every byte and the
// digest of every blob find damage; the .sha256 serves verify and
// sha256sum -c), but to tell a blob written damaged from one damaged on
// the way.
func walkFileWith(path string, lim Limits, progress *Progress, blob func(e Entry, body io.Reader, owners []int) error, start func(*Contents), hashFile bool) (*VerifyResult, error) {
	files, res, err := sourceFiles(path)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, pf := range files {
		if st, err := os.Stat(pf.path); err == nil {
			total += st.Size()
		}
	}
	progress.Start(total)
	s := &scanner{c: newContents(lim), blob: blob}
	if start != nil {
		start(s.c)
	}
	for _, pf := range files {
		sum, err := walkPart(pf, lim, progress, s, hashFile)
		if err != nil {
			return nil, err
		}
		if len(files) == 1 && res.SHA256 == "" {
			res.SHA256 = sum
		}
	}
	progress.Done()
	if err := s.c.finish(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !hashFile {
		res.SHA256, res.Checksum = "", false
	} else if !res.Checksum {
		s.c.Warnings = append(s.c.Warnings, fmt.Sprintf("no %s beside the archive: its checksum was not compared", ChecksumPath(path)))
	}
	sort.Slice(s.c.Packages, func(i, j int) bool { return s.c.Packages[i].Path < s.c.Packages[j].Path })
	res.Contents = s.c
	return res, nil
}

// partFile is one file to walk: the archive, or one part of a split one,
// with the sha256 it must have (want, when hasSum) and its name in errors.
type partFile struct {
	path, want, label string
	hasSum            bool
}

// sourceFiles lists the files of the archive at path: itself, or the
// parts its index lists (all there with the sizes it says, else one error
// naming every part missing or damaged).
func sourceFiles(path string) ([]partFile, *VerifyResult, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if st.IsDir() {
		if path, err = findIndex(path); err != nil {
			return nil, nil, err
		}
	}
	if !strings.HasSuffix(path, ".parts.json") {
		want, hasSum, err := readChecksum(path)
		if err != nil {
			return nil, nil, err
		}
		return []partFile{{path: path, want: want, label: path, hasSum: hasSum}}, &VerifyResult{Checksum: hasSum}, nil
	}
	idx, err := ReadParts(path)
	if err != nil {
		return nil, nil, err
	}
	if err := missingParts(path, idx); err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	res := &VerifyResult{SHA256: sha256Hex(data), Checksum: true, Parts: idx.Parts, Index: path}
	var files []partFile
	for i, p := range idx.Parts {
		pp := filepath.Join(filepath.Dir(path), p.Name)
		files = append(files, partFile{path: pp, want: p.SHA256, hasSum: true, label: fmt.Sprintf("%s (part %d of %d)", pp, i+1, len(idx.Parts))})
	}
	return files, res, nil
}

// walkPart walks one file with s and, with hashFile, returns its sha256
// (hex), checked against pf.want. Errors start with pf.label.
func walkPart(pf partFile, lim Limits, progress *Progress, s *scanner, hashFile bool) (string, error) {
	f, err := os.Open(pf.path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", pf.label, err)
	}
	defer f.Close()
	h := newAsyncHash()
	hashed := false
	defer func() {
		if !hashed {
			h.Sum()
		}
	}()
	var r io.Reader = f
	if hashFile {
		r = io.TeeReader(f, h)
	}
	var src *fileSource
	if !hashFile && fileIsTar(f) {
		// Push: the layers it uploads go from the file to the
		// connection, skipped here (sendFromFile).
		src = newFileSource(f, pf.path, progress)
	}
	if err := walk(io.TeeReader(r, progress), src, lim, s.visit); err != nil {
		var re *RegistryError
		var me *MapError
		if errors.As(err, &re) || errors.As(err, &me) {
			return "", err // the registry's failure, or the mapping's, not the file's
		}
		// A blob that does not match its digest in a file that matches its
		// .sha256 was written so: tell which of the two it is.
		var de *DigestError
		var ee *EntryError
		if pf.hasSum && errors.As(err, &de) && errors.As(err, &ee) {
			hashed = true // by fileMatches
			if fileMatches(f, h, hashFile, pf.want) {
				err = &EntryError{Entry: ee.Entry, Err: fmt.Errorf("%w: %w", de, ErrWrittenDamaged)}
			}
		}
		return "", fmt.Errorf("%s: %w", pf.label, err)
	}
	if !hashFile {
		return "", nil
	}
	// Hash whatever follows the gzip stream too: it is part of the file.
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	hashed = true
	sum := hex.EncodeToString(h.Sum())
	if pf.hasSum && sum != pf.want {
		return "", &EntryError{Err: fmt.Errorf("%s: sha256 is %s, but %s: %w", pf.label, sum, wantSays(pf), ErrCorrupt)}
	}
	return sum, nil
}

// fileMatches says whether the file f, read up to an error with h
// hashing it (when hashed), has the sha256 want: h hashes the rest, or the
// whole file from its start. h is summed either way.
func fileMatches(f *os.File, h *asyncHash, hashed bool, want string) bool {
	if !hashed {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			h.Sum()
			return false
		}
	}
	if _, err := io.Copy(h, f); err != nil {
		h.Sum()
		return false
	}
	return hex.EncodeToString(h.Sum()) == want
}

// wantSays names where the expected sha256 of pf comes from.
func wantSays(pf partFile) string {
	if pf.label == pf.path {
		return fmt.Sprintf("%s says %s", ChecksumPath(pf.path), pf.want)
	}
	return fmt.Sprintf("the index says %s", pf.want)
}

// readChecksum reads FILE.sha256 ("<hex>  name", as sha256sum writes).
func readChecksum(path string) (string, bool, error) {
	data, err := os.ReadFile(ChecksumPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	fields := bytes.Fields(data)
	if len(fields) == 0 || len(fields[0]) != 64 {
		return "", false, fmt.Errorf("%s: not a sha256sum line (<64 hex digits>  <file>)", ChecksumPath(path))
	}
	return strings.ToLower(string(fields[0])), true, nil
}
