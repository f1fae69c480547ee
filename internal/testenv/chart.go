package testenv

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"sort"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The media types of a chart in an OCI registry (Helm, "Use OCI-based
// registries"; helm.sh/helm/v4/pkg/registry): the config, the chart
// archive layer and the provenance layer.
const (
	chartConfigMediaType  = "application/vnd.cncf.helm.config.v1+json"
	chartContentMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	chartProvMediaType    = "application/vnd.cncf.helm.chart.provenance.v1.prov"
)

// ChartArchive packs files (path inside the archive, such as
// "web/Chart.yaml", → content) as `helm package` writes a chart: a gzipped
// tar of regular files, mode 0644, in path order. A write that fails
// fails t.
func ChartArchive(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(files[p])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, files[p]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// PushChart pushes a chart archive to ref as `helm push` does: an OCI
// image manifest with Helm's config media type, the archive as its one
// layer of the chart content media type, and the provenance file as a
// second layer when prov is not nil; opts go to every request. It returns
// the manifest's digest ("sha256:…"). A registry that refuses fails t.
func PushChart(t testing.TB, ref string, archive, prov []byte, opts ...remote.Option) string {
	t.Helper()
	adds := []mutate.Addendum{{Layer: static.NewLayer(archive, chartContentMediaType)}}
	if prov != nil {
		adds = append(adds, mutate.Addendum{Layer: static.NewLayer(prov, chartProvMediaType)})
	}
	img, err := mutate.Append(empty.Image, adds...)
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), chartConfigMediaType)
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, opts...); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}
