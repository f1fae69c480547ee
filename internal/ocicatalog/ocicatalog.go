// Package ocicatalog makes the OCI catalog: the rendered objects of one
// cluster (rendered/<cluster> of the catalog repo) as a single-layer OCI
// artifact that Flux's OCIRepository and Argo CD's OCI source (3.1 and
// later) both sync, for clusters that reach a registry and no Git server
// (docs/syncing.md, docs/design.md).
//
// The artifact is deterministic: the same files give the same bytes and so
// the same digest, whatever their modification times, owners or the order
// the file system lists them in, so a rerun that rendered nothing new
// pushes nothing. It is an OCI image manifest with
//
//   - one layer of media type LayerMediaType
//     (application/vnd.oci.image.layer.v1.tar+gzip): a gzipped tar of the
//     regular files under the directory, at the root of the archive, sorted,
//     mode 0644, owner 0:0, modification time the Unix epoch; directories
//     are implied by the file paths. Argo CD accepts this layer type by
//     default; Flux's OCIRepository selects it with
//     spec.layerSelector.mediaType and extracts it.
//   - a config of media type ConfigMediaType, the one `flux push artifact`
//     writes.
//   - the annotations SourceAnnotation and RevisionAnnotation: the package
//     repo and its commit the catalog was published from. Not the catalog
//     commit, which is made after the push and would make the digest
//     depend on itself.
//
// A signature attaches to the manifest digest as an OCI
// referrer; nothing in the artifact has to change for it.
package ocicatalog

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types and annotation keys of the artifact. The layer type is the
// OCI image layer type Argo CD accepts by default (its docs/user-guide/oci.md);
// the config type and the annotation keys are those of Flux's OCI artifacts
// (github.com/fluxcd/pkg/oci: CanonicalConfigMediaType, SourceAnnotation,
// RevisionAnnotation).
const (
	LayerMediaType     types.MediaType = "application/vnd.oci.image.layer.v1.tar+gzip"
	ConfigMediaType    types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	SourceAnnotation                   = "org.opencontainers.image.source"
	RevisionAnnotation                 = "org.opencontainers.image.revision"
)

// MaxFiles and MaxBytes bound what Build packs: a catalog is a few
// thousand small YAML files, and a directory far beyond that is a mistake
// (the wrong --catalog checkout, a stray build directory).
const (
	MaxFiles = 100000
	MaxBytes = 512 << 20
)

// Meta is what the artifact says about where it comes from.
type Meta struct {
	// Source is the package repo's URL (org.opencontainers.image.source).
	Source string
	// Revision is the package-repo commit the catalog was published from
	// (org.opencontainers.image.revision).
	Revision string
}

// Build returns the artifact of the regular files under dir (recursively;
// paths in the archive are relative to dir, with slashes). It fails, naming
// the file, on a symbolic link, a device or any other file that is neither
// a directory nor a regular file, and when dir holds no file, more than
// MaxFiles files or more than MaxBytes bytes. Nothing is written anywhere.
func Build(dir string, meta Meta) (v1.Image, error) {
	return BuildFS(os.DirFS(dir), dir, meta)
}

// BuildFS is Build of the tree of fsys (an in-memory render, a Git tree
// through io/fs); where names it in errors.
func BuildFS(fsys fs.FS, where string, meta Meta) (v1.Image, error) {
	var names []string
	var total int64
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("ocicatalog: %w", err)
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("ocicatalog: %s is not a regular file (%s): the OCI catalog holds only the rendered YAML files; remove it", path.Join(filepath.ToSlash(where), p), d.Type())
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		names = append(names, p)
		if len(names) > MaxFiles || total > MaxBytes {
			return tooMuch(where)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return build(names, func(n string) ([]byte, error) { return fs.ReadFile(fsys, n) }, where, meta)
}

// BuildFiles is Build of files: file contents by slash-separated path
// relative to the artifact root (the files of rendered/<cluster> with that
// prefix cut, as `publish run` has them in memory after the render); where
// names them in errors. A path that is not local (absolute, "..") is an
// error, as are no file, more than MaxFiles files or more than MaxBytes
// bytes. The same files give the same artifact as Build of a directory
// holding them.
func BuildFiles(files map[string][]byte, where string, meta Meta) (v1.Image, error) {
	names := make([]string, 0, len(files))
	var total int64
	for n, data := range files {
		if !fs.ValidPath(n) || n == "." {
			return nil, fmt.Errorf("ocicatalog: %s: %q is not a relative path inside the artifact", where, n)
		}
		total += int64(len(data))
		names = append(names, n)
	}
	if len(names) > MaxFiles || total > MaxBytes {
		return nil, tooMuch(where)
	}
	return build(names, func(n string) ([]byte, error) { return files[n], nil }, where, meta)
}

func tooMuch(where string) error {
	return fmt.Errorf("ocicatalog: %s holds more than %d files or %d bytes: is it the rendered directory of one cluster?", where, MaxFiles, MaxBytes)
}

// build makes the artifact of the files names (read through read).
func build(names []string, read func(string) ([]byte, error), where string, meta Meta) (v1.Image, error) {
	layer, err := buildLayer(names, read, where)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer, MediaType: LayerMediaType})
	if err != nil {
		return nil, fmt.Errorf("ocicatalog: %s: %w", where, err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ConfigMediaType)
	anns := map[string]string{}
	if meta.Source != "" {
		anns[SourceAnnotation] = meta.Source
	}
	if meta.Revision != "" {
		anns[RevisionAnnotation] = meta.Revision
	}
	if len(anns) > 0 {
		img = mutate.Annotations(img, anns).(v1.Image)
	}
	return img, nil
}

// buildLayer packs the files names into the layer (see the package doc).
func buildLayer(names []string, read func(string) ([]byte, error), where string) (v1.Layer, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("ocicatalog: %s holds no file: render the cluster first (publish render --cluster)", where)
	}
	names = append([]string(nil), names...)
	sort.Strings(names)

	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	// The gzip header carries no name and no time: the same files, the
	// same bytes.
	tw := tar.NewWriter(zw)
	for _, n := range names {
		data, err := read(n)
		if err != nil {
			return nil, fmt.Errorf("ocicatalog: %s: %w", where, err)
		}
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     path.Clean(n),
			Mode:     0o644,
			Size:     int64(len(data)),
			ModTime:  time.Unix(0, 0).UTC(),
			Format:   tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("ocicatalog: %s: %w", path.Join(filepath.ToSlash(where), n), err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	gz := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz)), nil
	}, tarball.WithMediaType(LayerMediaType))
}

// Result is what Push did.
type Result struct {
	// Ref is the tag pushed to, as given to Push (PushImage: the tag's
	// String).
	Ref string
	// Digest is the manifest digest ("sha256:…"): what the tag points at
	// after Push, to record in the catalog state and to pin a cluster to.
	Digest string
	// Pushed is false when the tag already pointed at Digest: nothing was
	// written to the registry.
	Pushed bool
}

// Push builds the artifact of dir (Build) and pushes it to ref, a tag
// ("registry.example.com/platform/operator-catalog:global"), with the
// remote options of the destination registry (credentials, transport with
// its CA): PushImage. Errors name ref.
func Push(ctx context.Context, dir, ref string, meta Meta, opts ...remote.Option) (Result, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return Result{}, fmt.Errorf("ocicatalog: %q is not a tag reference (registry/repository:tag): %w", ref, err)
	}
	img, err := Build(dir, meta)
	if err != nil {
		return Result{}, err
	}
	res, err := PushImage(ctx, img, tag, opts...)
	if err == nil {
		res.Ref = ref
	}
	return res, err
}

// PushImage pushes img (an artifact of Build, BuildFS or BuildFiles) to
// tag with the remote options of the destination registry. When the tag
// already points at the same digest, nothing is written (Result.Pushed is
// false): a HEAD request is all it costs. Errors name the tag; a
// registry's 401 or 403 says to check the destination credentials.
func PushImage(ctx context.Context, img v1.Image, tag name.Tag, opts ...remote.Option) (Result, error) {
	ref := tag.String()
	d, err := img.Digest()
	if err != nil {
		return Result{}, err
	}
	res := Result{Ref: ref, Digest: d.String()}
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	if desc, err := remote.Head(tag, opts...); err == nil && desc.Digest == d {
		return res, nil
	} else if err != nil && !isNotFound(err) {
		return Result{}, registryError(ref, err)
	}
	if err := remote.Write(tag, img, opts...); err != nil {
		return Result{}, registryError(ref, err)
	}
	res.Pushed = true
	return res, nil
}

// Tag returns the tag the OCI catalog of cluster is pushed to: ref
// (registry/repository[:tag], from clusters.<cluster>.oci in publish.yaml
// or --oci) with the tag cluster when ref names none. opts are the naming
// options of the registry client (name.Insecure for plain HTTP). Errors: a
// reference with a digest, without a registry host, or that does not
// parse; they say what to write.
func Tag(ref, cluster string, opts ...name.Option) (name.Tag, error) {
	bad := func(why string) (name.Tag, error) {
		return name.Tag{}, fmt.Errorf("OCI catalog reference %q %s: want REGISTRY/REPOSITORY[:TAG], e.g. registry.example.com/platform/operator-catalog (tag: the cluster name)", ref, why)
	}
	if strings.Contains(ref, "@") {
		return bad("names a digest")
	}
	host, _, ok := strings.Cut(ref, "/")
	if !ok || !strings.ContainsAny(host, ".:") && host != "localhost" {
		return bad("has no registry host")
	}
	if !strings.Contains(ref[strings.LastIndex(ref, "/")+1:], ":") {
		ref += ":" + cluster
	}
	tag, err := name.NewTag(ref, append([]name.Option{name.StrictValidation}, opts...)...)
	if err != nil {
		return bad("is not valid (" + err.Error() + ")")
	}
	return tag, nil
}

// isNotFound reports whether a registry answered that the tag does not
// exist (a HEAD gets a bare 404).
func isNotFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == 404
}

func registryError(ref string, err error) error {
	var terr *transport.Error
	if errors.As(err, &terr) && (terr.StatusCode == 401 || terr.StatusCode == 403) {
		return fmt.Errorf("ocicatalog: pushing the OCI catalog to %s: %w (check the destination registry's credentials)", ref, err)
	}
	return fmt.Errorf("ocicatalog: pushing the OCI catalog to %s: %w", ref, err)
}
