package bundle_test

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/operator-publish/publish/internal/bundle"
)

func TestBuildDeterministic(t *testing.T) {
	img1, err := bundle.Build(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	img2, err := bundle.Build(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	// A copy elsewhere, with other modification times, gives the same image.
	cp := copyDir(t, demoDir)
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(cp, "metadata", "annotations.yaml"), old, old); err != nil {
		t.Fatal(err)
	}
	img3, err := bundle.Build(cp)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img1.Digest()
	d2, _ := img2.Digest()
	d3, _ := img3.Digest()
	if d1 != d2 || d1 != d3 {
		t.Fatalf("digests differ: %s, %s, copy %s", d1, d2, d3)
	}

	// Adding a file changes the digest.
	writeFiles(t, cp, map[string]string{"manifests/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"})
	img4, err := bundle.Build(cp)
	if err != nil {
		t.Fatal(err)
	}
	if d4, _ := img4.Digest(); d4 == d1 {
		t.Errorf("adding a file kept the digest %s", d1)
	}
}

func TestBuildImage(t *testing.T) {
	img, err := bundle.Build(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("media type %s, want %s", mt, types.OCIManifestSchema1)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform %s/%s, want linux/amd64", cf.OS, cf.Architecture)
	}
	want := map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         "demo",
		"operators.operatorframework.io.bundle.channels.v1":        "stable,, fast ,",
		"operators.operatorframework.io.bundle.channel.default.v1": "stable",
	}
	if !reflect.DeepEqual(cf.Config.Labels, want) {
		t.Errorf("labels = %v\nwant %v", cf.Config.Labels, want)
	}

	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: uid %d gid %d mtime %v; want root and the epoch", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		if (h.Typeflag == tar.TypeDir && h.Mode != 0o755) || (h.Typeflag == tar.TypeReg && h.Mode != 0o644) {
			t.Errorf("%s: mode %o", h.Name, h.Mode)
		}
	}
	wantNames := []string{
		"manifests/",
		"manifests/demo-operator.clusterserviceversion.yaml",
		"manifests/demo.example.com_widgets.yaml",
		"metadata/",
		"metadata/annotations.yaml",
	}
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("layer entries = %q\nwant %q", names, wantNames)
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("layer entries not sorted: %q", names)
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T) string
		want    string
	}{
		{
			name: "no manifests dir",
			prepare: func(t *testing.T) string {
				d := copyDir(t, demoDir)
				mustRemoveAll(t, filepath.Join(d, "manifests"))
				return d
			},
			want: "no manifests/ directory",
		},
		{
			name: "manifests is a file",
			prepare: func(t *testing.T) string {
				d := t.TempDir()
				writeFiles(t, d, map[string]string{"manifests": "not a dir"})
				return d
			},
			want: "no manifests/ directory",
		},
		{
			name:    "dir does not exist",
			prepare: func(t *testing.T) string { return filepath.Join(t.TempDir(), "absent") },
			want:    "no manifests/ directory",
		},
		{
			name: "annotations not YAML",
			prepare: func(t *testing.T) string {
				d := copyDir(t, demoDir)
				writeFiles(t, d, map[string]string{"metadata/annotations.yaml": "annotations: [unclosed\n"})
				return d
			},
			want: "annotations.yaml",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			img, err := bundle.Build(tc.prepare(t))
			if err == nil {
				t.Fatalf("Build succeeded (%v), want an error", img)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestBuildWithoutMetadata(t *testing.T) {
	d := copyDir(t, demoDir)
	mustRemoveAll(t, filepath.Join(d, "metadata"))
	img, err := bundle.Build(d)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Config.Labels) != 0 {
		t.Errorf("labels %v without annotations.yaml, want none", cf.Config.Labels)
	}
}

// TestBuildThenLoad checks that FromImage reads back what Build wrote.
func TestBuildThenLoad(t *testing.T) {
	img, err := bundle.Build(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := bundle.FromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	want, err := bundle.Load(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := facts(got), facts(want); !reflect.DeepEqual(g, w) {
		t.Errorf("FromImage(Build(dir)) = %+v\nLoad(dir) = %+v", g, w)
	}
}

func mustRemoveAll(t *testing.T, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
}
