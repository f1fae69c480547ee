// Package bundle reads an OLM registry+v1 bundle image (manifests/ and
// metadata/ in its layers, https://olm.operatorframework.io/docs/tasks/creating-operator-bundle/)
// and exposes the facts of its ClusterServiceVersion that publishing needs.
package bundle

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/operator-publish/publish/internal/scratch"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-publish/publish/internal/registry"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// CSV annotations read by the Alauda OperatorHub page (docs/design.md#alauda-facts).
const (
	AnnotationProviderType = "provider-type"
	AnnotationProvider     = "provider"
	AnnotationProviderURL  = "provider-url"
)

// AnnotationSubstitutesFor is the CSV annotation olm.substitutesFor: the
// bundle replaces the one named, a rebuild of the same version whose
// release is spec.version's build metadata (opm's "legacy" release).
const AnnotationSubstitutesFor = "olm.substitutesFor"

// Limits on what Fetch extracts from a bundle image: bundles are a few
// hundred KiB of YAML; anything far larger is not a bundle.
const (
	maxFileBytes  = 32 << 20
	maxTotalBytes = 128 << 20
	// MaxLayers is the most layers a bundle image may have (a bundle
	// built by operator-sdk or opm has one).
	MaxLayers = 128
	// MaxFiles is the most files and directories a bundle may hold below
	// manifests/ and metadata/: a bundle has tens; 100,000 small ones would
	// make reading and linting it run for half an hour.
	MaxFiles = 1000
)

// Bundle is what publishing needs to know about one bundle.
type Bundle struct {
	// Ref is the reference the bundle was read from; Digest the manifest
	// digest at the source ("" when loaded from a directory).
	Ref    string
	Digest string

	// CSV is the ClusterServiceVersion, as loaded by operator-framework/api.
	CSV *v1alpha1.ClusterServiceVersion
	// Loaded is the full bundle (CSV, CRDs, other objects) as
	// operator-framework/api's manifests.GetBundleFromDir loads it (Load
	// reads it the same way, faster: loadManifests).
	Loaded *manifests.Bundle
	// crdKeys: CRDKey.
	crdKeys map[any][32]byte

	CSVName      string // metadata.name of the CSV, e.g. etcdoperator.v0.9.4
	Version      string // CSV spec.version, "" when absent
	DisplayName  string // CSV spec.displayName
	Description  string // CSV metadata.annotations.description (the short one)
	ProviderType string // CSV annotation provider-type
	Provider     string // CSV annotation provider
	ProviderURL  string // CSV annotation provider-url
	Package      string // metadata/annotations.yaml package
	// Release is the CSV's spec.release as opm reads it (text, or a number
	// written as text, as opm converts it), "" when absent; SubstitutesFor its
	// olm.substitutesFor annotation (the older way to order rebuilds: the
	// release in spec.version's build metadata).
	Release        string
	SubstitutesFor string
	// Annotations is metadata/annotations.yaml as written (nil when the
	// bundle has none); lint checks its labels.
	Annotations map[string]string
	// Metadata holds the files of metadata/ by file name, as written
	// (annotations.yaml, dependencies.yaml, properties.yaml): the OLM
	// catalog (internal/olm) reads dependencies and properties from them.
	Metadata       map[string][]byte
	Channels       []string
	DefaultChannel string
	// Images is every image the CSV deploys: deployment containers and
	// initContainers, RELATED_IMAGE_* env values and spec.relatedImages;
	// sorted, unique.
	Images []string
	// Catalog, when set, is what a target that condensed the bundle as it
	// was read keeps of the objects Slim drops, in the target's own JSON
	// (the olm target: its olm.bundle entry and installer rules,
	// internal/olm.Condense); nil for a bundle read whole or made slim by
	// Slim alone.
	Catalog json.RawMessage `json:",omitempty"`
}

// NotFoundError says that a bundle image does not exist at the source.
// It is an input error: spec.artifact names a wrong reference.
type NotFoundError struct{ Ref string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("bundle image %s not found: check spec.artifact and that the image was pushed", e.Ref)
}

// InvalidError says that an image is not a usable bundle (no CSV, several
// CSVs, unparseable manifests). It is an input error.
type InvalidError struct {
	Ref string
	Err error
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("bundle image %s is not a valid registry+v1 bundle: %v", e.Ref, e.Err)
}
func (e *InvalidError) Unwrap() error { return e.Err }

// Fetch pulls the bundle image ref (a single-platform image; for an image
// index the linux/amd64 child or else the first child is read) with the given
// remote options, extracts manifests/ and metadata/ and loads the bundle.
//
// Errors: *NotFoundError when the registry answers 404/MANIFEST_UNKNOWN;
// *InvalidError when the image holds no loadable bundle; registry transport
// errors (unreachable, 401/403) are returned wrapped, naming the reference.
func Fetch(ctx context.Context, ref string, opts ...remote.Option) (*Bundle, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, &InvalidError{Ref: ref, Err: err}
	}
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	desc, err := remote.Get(r, opts...)
	if err != nil {
		if registry.IsNotFound(err) {
			return nil, &NotFoundError{Ref: ref}
		}
		return nil, fmt.Errorf("fetching bundle image %s: %w", ref, err)
	}
	var img v1.Image
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("fetching bundle image %s: %w", ref, err)
		}
		img, err = pickImage(idx)
		if err != nil {
			return nil, &InvalidError{Ref: ref, Err: err}
		}
	} else {
		img, err = desc.Image()
		if err != nil {
			return nil, fmt.Errorf("fetching bundle image %s: %w", ref, err)
		}
	}
	b, err := FromImage(img)
	if err != nil {
		var inv *InvalidError
		if errors.As(err, &inv) {
			inv.Ref = ref
			return nil, inv
		}
		return nil, fmt.Errorf("reading bundle image %s: %w", ref, err)
	}
	b.Ref = ref
	b.Digest = desc.Digest.String()
	return b, nil
}

func pickImage(idx v1.ImageIndex) (v1.Image, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) == 0 {
		return nil, errors.New("image index has no manifests")
	}
	pick := im.Manifests[0]
	for _, m := range im.Manifests {
		if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == "amd64" {
			pick = m
			break
		}
	}
	return idx.Image(pick.Digest)
}

// FromImage extracts manifests/ and metadata/ of img (the flattened
// filesystem of its layers) into a temporary directory and loads it with
// Load. Entries outside manifests/ and metadata/ are ignored; links, path
// traversal and oversized files are rejected with an *InvalidError.
func FromImage(img v1.Image) (*Bundle, error) {
	dir, err := scratch.MkdirTemp("", "bundle")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := extract(img, dir); err != nil {
		return nil, err
	}
	return Load(dir)
}

// OCI layer whiteouts (image-spec layer.md).
const (
	whiteoutPrefix = ".wh."
	opaqueWhiteout = ".wh..wh..opq"
)

// extractor flattens the layers of an image, top-most first, into dir,
// keeping only manifests/ and metadata/. It reads the layer tars itself
// rather than through mutate.Extract so that every entry under manifests/
// and metadata/ is seen: mutate.Extract drops relative links that leave the
// root silently and reports "../" paths as an untyped error, which would
// make a hostile bundle look like a registry failure.
type extractor struct {
	dir string
	// seen holds the paths handled by an upper layer; true when the path is
	// a file or a whiteout, which hides everything below it in lower layers.
	seen map[string]bool
	// opaque holds the directories made opaque by an upper layer.
	opaque map[string]bool
	total  int64
}

func extract(img v1.Image, dir string) error {
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("reading image layers: %w", err)
	}
	if len(layers) > MaxLayers {
		return &InvalidError{Err: fmt.Errorf("the image has %d layers, more than a bundle can have (%d)", len(layers), MaxLayers)}
	}
	x := &extractor{dir: dir, seen: map[string]bool{}, opaque: map[string]bool{}}
	for i := len(layers) - 1; i >= 0; i-- {
		if err := x.layer(layers[i]); err != nil {
			return err
		}
	}
	return nil
}

func (x *extractor) layer(l v1.Layer) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return fmt.Errorf("reading image layers: %w", err)
	}
	defer rc.Close()
	layerOpaque := map[string]bool{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading image layers: %w", err)
		}
		clean := path.Clean(strings.TrimLeft(h.Name, "/"))
		if clean == ".." || strings.HasPrefix(clean, "../") {
			return &InvalidError{Err: fmt.Errorf("layer entry %q escapes the image root", h.Name)}
		}
		dirname, base := path.Dir(clean), path.Base(clean)
		if base == opaqueWhiteout {
			layerOpaque[dirname] = true
			continue
		}
		whiteout := strings.HasPrefix(base, whiteoutPrefix)
		if whiteout {
			clean = path.Join(dirname, strings.TrimPrefix(base, whiteoutPrefix))
		}
		top, _, _ := strings.Cut(clean, "/")
		if top != "manifests" && top != "metadata" {
			continue
		}
		// Checked before shadowing: a bundle holds no links at all, in any
		// layer.
		if !whiteout && h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeReg {
			return &InvalidError{Err: fmt.Errorf("layer entry %s is a link or special file; a bundle holds regular files only", h.Name)}
		}
		if whiteout {
			// Hides clean in lower layers, even where an upper layer
			// made it again.
			x.seen[clean] = true
			continue
		}
		if _, ok := x.seen[clean]; ok || x.hidden(clean) {
			continue
		}
		x.seen[clean] = h.Typeflag != tar.TypeDir
		if len(x.seen) > MaxFiles {
			return &InvalidError{Err: fmt.Errorf("manifests/ and metadata/ hold more than %d files and directories, more than a bundle can have", MaxFiles)}
		}
		// The parents are directories from here down: a lower layer's
		// file at one of them is shadowed, as a container runtime would.
		for d := path.Dir(clean); d != "."; d = path.Dir(d) {
			if _, ok := x.seen[d]; !ok {
				x.seen[d] = false
			}
		}
		if err := x.write(h, tr, clean); err != nil {
			return err
		}
	}
	for d := range layerOpaque {
		x.opaque[d] = true
	}
	// Read to the end so that the layer digest is verified.
	if _, err := io.Copy(io.Discard, rc); err != nil {
		return fmt.Errorf("reading image layers: %w", err)
	}
	return nil
}

// hidden reports whether an upper layer hides p: a file or whiteout at one
// of its parents, or an opaque parent directory.
func (x *extractor) hidden(p string) bool {
	for d := path.Dir(p); ; d = path.Dir(d) {
		if x.seen[d] || x.opaque[d] {
			return true
		}
		if d == "." {
			return false
		}
	}
}

func (x *extractor) write(h *tar.Header, r io.Reader, clean string) error {
	target := filepath.Join(x.dir, filepath.FromSlash(clean))
	switch h.Typeflag {
	case tar.TypeDir:
		return os.MkdirAll(target, 0o755)
	case tar.TypeReg:
		if h.Size > maxFileBytes {
			return &InvalidError{Err: fmt.Errorf("layer entry %s is %d bytes, more than a bundle file can be (%d)", h.Name, h.Size, maxFileBytes)}
		}
		x.total += h.Size
		if x.total > maxTotalBytes {
			return &InvalidError{Err: fmt.Errorf("manifests/ and metadata/ exceed %d bytes", maxTotalBytes)}
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, io.LimitReader(r, maxFileBytes))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return nil
}

// Load reads a bundle directory (manifests/ and metadata/) with
// operator-framework/api and extracts the CSV facts. Errors are
// *InvalidError: no CSV, several CSVs, unparseable objects.
func Load(dir string) (*Bundle, error) {
	if _, err := os.Stat(filepath.Join(dir, "manifests")); err != nil {
		return nil, &InvalidError{Err: errors.New("no manifests/ directory")}
	}
	loadDir, done, err := withTextRelease(dir)
	if err != nil {
		return nil, err
	}
	defer done()
	lb, crdKeys, err := loadManifests(loadDir)
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), loadDir+string(filepath.Separator), "")
		msg = strings.ReplaceAll(msg, dir+string(filepath.Separator), "")
		msg = strings.ReplaceAll(msg, dir, "the bundle")
		return nil, &InvalidError{Err: errors.New(msg)}
	}
	if lb == nil || lb.CSV == nil {
		return nil, &InvalidError{Err: errors.New("no ClusterServiceVersion in manifests/")}
	}
	var ann map[string]string
	if data, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml")); err == nil {
		var af struct {
			Annotations map[string]string `json:"annotations"`
		}
		if err := yaml.Unmarshal(data, &af); err != nil {
			return nil, &InvalidError{Err: fmt.Errorf("metadata/annotations.yaml: %v", err)}
		}
		ann = af.Annotations
	}
	meta, err := readMetadata(filepath.Join(dir, "metadata"))
	if err != nil {
		return nil, err
	}
	csv := lb.CSV
	b := &Bundle{
		Metadata:       meta,
		CSV:            csv,
		Loaded:         lb,
		CSVName:        csv.Name,
		DisplayName:    csv.Spec.DisplayName,
		Description:    csv.Annotations["description"],
		ProviderType:   csv.Annotations[AnnotationProviderType],
		Provider:       csv.Annotations[AnnotationProvider],
		ProviderURL:    csv.Annotations[AnnotationProviderURL],
		Package:        lb.Package,
		Annotations:    ann,
		DefaultChannel: lb.DefaultChannel,
		Images:         Images(csv),
		crdKeys:        crdKeys,
	}
	if csv.Spec.Version.Version.String() != "0.0.0" {
		b.Version = csv.Spec.Version.String()
	}
	b.Release = csv.Spec.Release.String()
	b.SubstitutesFor = csv.Annotations[AnnotationSubstitutesFor]
	for _, c := range lb.Channels {
		if c = strings.TrimSpace(c); c != "" {
			b.Channels = append(b.Channels, c)
		}
	}
	return b, nil
}

// CRDKey returns a key of the content of crd, one of b.Loaded's V1CRDs or
// V1beta1CRDs (the pointer Load put there): two CRDs with the same key were
// decoded from the same bytes, so what a pure function of a CRD gives for
// one (the CRD validator's findings) holds for the other. ok is false when
// Load did not record one (a bundle operator-framework's loader read, a
// CRD of a file of several documents, a bundle built by hand).
func (b *Bundle) CRDKey(crd any) (key [32]byte, ok bool) {
	key, ok = b.crdKeys[crd]
	return key, ok
}

// readMetadata reads the regular files of a bundle's metadata/ directory
// (nil when there is none).
func readMetadata(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("metadata/: %v", err)}
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, &InvalidError{Err: fmt.Errorf("metadata/%s: %v", e.Name(), err)}
		}
		out[e.Name()] = data
	}
	return out, nil
}

// Images returns every image csv deploys: the containers and initContainers
// of each install-strategy deployment, the values of their RELATED_IMAGE_*
// environment variables, and spec.relatedImages; sorted, without duplicates
// or empty values.
func Images(csv *v1alpha1.ClusterServiceVersion) []string {
	set := map[string]bool{}
	addContainers := func(cs []corev1.Container) {
		for _, c := range cs {
			set[strings.TrimSpace(c.Image)] = true
			for _, e := range c.Env {
				if strings.HasPrefix(e.Name, "RELATED_IMAGE_") {
					set[strings.TrimSpace(e.Value)] = true
				}
			}
		}
	}
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		addContainers(d.Spec.Template.Spec.InitContainers)
		addContainers(d.Spec.Template.Spec.Containers)
	}
	for _, ri := range csv.Spec.RelatedImages {
		set[strings.TrimSpace(ri.Image)] = true
	}
	delete(set, "")
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
