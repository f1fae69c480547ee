package bundle

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"
)

// Build makes a registry+v1 bundle image from dir, a bundle directory in the
// layout of the operator-framework bundle format
// (https://olm.operatorframework.io/docs/tasks/creating-operator-bundle/):
// dir/manifests/ (CSV, CRDs, other objects) and dir/metadata/annotations.yaml.
//
// The image has one uncompressed-content layer holding manifests/ and
// metadata/ (and metadata/ only if present), an OCI manifest, linux/amd64
// config, and the annotations of metadata/annotations.yaml copied into the
// config labels, as `opm alpha bundle build` does. Build is deterministic:
// the same directory content always gives the same digest (sorted entries,
// zero times, root owner, 0644/0755 modes).
//
// Errors: dir without manifests/, unreadable files, an annotations.yaml that
// is not YAML.
func Build(dir string) (v1.Image, error) {
	if st, err := os.Stat(filepath.Join(dir, "manifests")); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("bundle directory %s: no manifests/ directory (a bundle needs manifests/ and metadata/)", dir)
	}
	var files []string
	for _, top := range []string{"manifests", "metadata"} {
		root := filepath.Join(dir, top)
		if _, err := os.Stat(root); os.IsNotExist(err) {
			continue
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				rel, err := filepath.Rel(dir, p)
				if err != nil {
					return err
				}
				files = append(files, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("bundle directory %s: %w", dir, err)
		}
	}
	contents := make(map[string][]byte, len(files))
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return nil, fmt.Errorf("bundle directory %s: %w", dir, err)
		}
		contents[f] = data
	}
	labels := map[string]string{}
	if data, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml")); err == nil {
		var af struct {
			Annotations map[string]string `json:"annotations"`
		}
		if err := yaml.Unmarshal(data, &af); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "metadata", "annotations.yaml"), err)
		}
		for k, v := range af.Annotations {
			labels[k] = v
		}
	}

	return LayerImage(contents, labels)
}

// LayerImage makes a deterministic linux/amd64 OCI image with one layer
// holding files (slash-separated relative paths to content) and the given
// config labels. Entries are sorted, parent directories added once, times
// zero, owner root, modes 0644/0755: the same input always gives the same
// digest. Bundle images (Build) and the stand-in images of the demo and the
// tests are made with it.
func LayerImage(files map[string][]byte, labels map[string]string) (v1.Image, error) {
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seenDirs := map[string]bool{}
	epoch := time.Unix(0, 0).UTC()
	for _, f := range names {
		if f == "" || path.IsAbs(f) || path.Clean(f) != f || strings.HasPrefix(f, "../") {
			return nil, fmt.Errorf("layer file name %q is not a clean relative path", f)
		}
		// Parent directories first, each once.
		if d := path.Dir(f); d != "." {
			parts := strings.Split(d, "/")
			for i := range parts {
				dir := strings.Join(parts[:i+1], "/") + "/"
				if seenDirs[dir] {
					continue
				}
				seenDirs[dir] = true
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
					return nil, err
				}
			}
		}
		data := files[f]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = "amd64"
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Labels = labels
	return mutate.ConfigFile(img, cf)
}
