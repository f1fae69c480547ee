package kind

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"helm.sh/helm/v4/pkg/registry"
)

// ChartImage packages a chart archive (.tgz, as a classic repository
// serves it) as the OCI artifact `helm push` makes of it (Helm's
// pkg/registry, Client.Push): an OCI image manifest whose config is
// Chart.yaml's metadata as JSON (media type registry.ConfigMediaType,
// application/vnd.cncf.helm.config.v1+json) and whose one layer is the
// archive byte for byte (registry.ChartLayerMediaType,
// application/vnd.cncf.helm.chart.content.v1.tar+gzip), annotated as Helm
// annotates it (org.opencontainers.image.title, version, description,
// url, source, authors and the chart's own annotations) except for
// org.opencontainers.image.created, which Helm sets to the time of the
// push: left out, the same archive always gives the same digest. The
// error is a *ChartError when the archive is no chart the Helm SDK loads.
func ChartImage(ref string, archive []byte) (v1.Image, error) {
	c, err := loadChart(ref, archive)
	if err != nil {
		return nil, err
	}
	config, err := json.Marshal(c.Metadata)
	if err != nil {
		return nil, &ChartError{Ref: ref, Err: err}
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: static.NewLayer(archive, registry.ChartLayerMediaType)})
	if err != nil {
		return nil, &ChartError{Ref: ref, Err: err}
	}
	img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), registry.ConfigMediaType)
	m := c.Metadata
	ann := map[string]string{}
	for k, v := range m.Annotations {
		ann[k] = v
	}
	set := func(k, v string) {
		if strings.TrimSpace(v) != "" {
			ann[k] = v
		}
	}
	set("org.opencontainers.image.description", m.Description)
	set("org.opencontainers.image.title", m.Name)
	set("org.opencontainers.image.version", m.Version)
	set("org.opencontainers.image.url", m.Home)
	if len(m.Sources) > 0 {
		set("org.opencontainers.image.source", m.Sources[0])
	}
	var authors []string
	for _, a := range m.Maintainers {
		s := a.Name
		if a.Email != "" {
			s += " (" + a.Email + ")"
		}
		authors = append(authors, s)
	}
	set("org.opencontainers.image.authors", strings.Join(authors, ", "))
	img = mutate.Annotations(img, ann).(v1.Image)
	// mutate.ConfigFile would write an image config; the chart's config
	// is Chart.yaml's metadata, set as a raw blob.
	if img, err = withRawConfig(img, config); err != nil {
		return nil, &ChartError{Ref: ref, Err: err}
	}
	return img, nil
}

// withRawConfig returns img with config as its config blob (the
// manifest's config descriptor: its digest and size, img's media type).
func withRawConfig(img v1.Image, config []byte) (v1.Image, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	m = m.DeepCopy()
	h, n, err := v1.SHA256(bytes.NewReader(config))
	if err != nil {
		return nil, err
	}
	m.Config.Digest, m.Config.Size = h, n
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &rawConfigImage{Image: img, config: config, manifest: m, raw: raw}, nil
}

// rawConfigImage is an image whose config blob is given as bytes.
type rawConfigImage struct {
	v1.Image
	config   []byte
	manifest *v1.Manifest
	raw      []byte
}

func (i *rawConfigImage) RawConfigFile() ([]byte, error) { return i.config, nil }
func (i *rawConfigImage) ConfigName() (v1.Hash, error)   { return i.manifest.Config.Digest, nil }
func (i *rawConfigImage) ConfigFile() (*v1.ConfigFile, error) {
	return nil, errors.New("a Helm chart has no image config")
}
func (i *rawConfigImage) Manifest() (*v1.Manifest, error) { return i.manifest.DeepCopy(), nil }
func (i *rawConfigImage) RawManifest() ([]byte, error)    { return i.raw, nil }
func (i *rawConfigImage) Digest() (v1.Hash, error) {
	h, _, err := v1.SHA256(bytes.NewReader(i.raw))
	return h, err
}
func (i *rawConfigImage) Size() (int64, error) { return int64(len(i.raw)), nil }

// LayerByDigest serves the config blob besides the layers (remote.Write
// uploads the config through it).
func (i *rawConfigImage) LayerByDigest(h v1.Hash) (v1.Layer, error) {
	if h == i.manifest.Config.Digest {
		return static.NewLayer(i.config, i.manifest.Config.MediaType), nil
	}
	return i.Image.LayerByDigest(h)
}

// ChartFiles returns the files of a chart archive (.tgz) by their path
// below the chart's top directory ("Chart.yaml", "templates/x.yaml",
// "charts/sub/Chart.yaml"), each byte for byte as the archive holds it:
// the chart's source, as a Git path of chart sources holds it (Captain's
// ChartRepo of type Git packages every directory there with a
// Chart.yaml). Directories, links and other non-regular entries are left
// out. Errors: a *ChartError naming ref for an archive that is not gzip
// and tar, an entry outside the one top directory, a path with "..", or
// more than maxChartSize bytes unpacked.
func ChartFiles(ref string, archive []byte) (map[string][]byte, error) {
	bad := func(err error) error { return &ChartError{Ref: ref, Err: fmt.Errorf("chart archive: %w", err)} }
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return nil, bad(err)
	}
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	top, total := "", int64(0)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, bad(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := strings.TrimPrefix(h.Name, "./")
		dir, rest, ok := strings.Cut(name, "/")
		switch {
		case !ok || rest == "" || path.Clean(rest) != rest || strings.HasPrefix(rest, "../") || rest == "..":
			return nil, bad(fmt.Errorf("entry %q is not a file below the chart's directory", h.Name))
		case top != "" && dir != top:
			return nil, bad(fmt.Errorf("entry %q is outside the chart's directory %s/", h.Name, top))
		}
		top = dir
		total += h.Size
		if total > maxChartSize {
			return nil, bad(fmt.Errorf("larger than %d bytes unpacked", maxChartSize))
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, bad(err)
		}
		out[rest] = data
	}
	if len(out) == 0 {
		return nil, bad(errors.New("no files"))
	}
	return out, nil
}
