package olm

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// TestCatalogIcon: the package icon of our file-based catalog, read back by
// operator-registry's own loader (declcfg.LoadFS over the files Files
// writes, unpacked from the catalog image's layer), is the image the CSV's base64data encodes,
// not the base64 text encoded once more (the console then shows no icon).
func TestCatalogIcon(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")
	b := csvBundle(t, "iconic", "1.0.0", "", nil, "", "stable")
	// Wrapped as a folded YAML scalar leaves it: a line break inside.
	text := base64.StdEncoding.EncodeToString(png)
	b.CSV.Spec.Icon = []v1alpha1.Icon{{Data: text[:20] + "\n" + text[20:], MediaType: "image/png"}}
	cfg, err := Build([]Package{{Name: "iconic", Entries: entries(b)}}, "")
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The catalog image's layer, unpacked as a container runtime would.
	layer, err := Layer(context.Background(), files, 1001, true)
	if err != nil {
		t.Fatal(err)
	}
	img, err := Image(empty.Image, layer, true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || !strings.HasPrefix(h.Name, ConfigsDir+"/") {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(h.Name))
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	loaded, err := declcfg.LoadFS(context.Background(), os.DirFS(filepath.Join(dir, ConfigsDir)))
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Packages) != 1 || loaded.Packages[0].Icon == nil {
		t.Fatalf("packages: %+v", loaded.Packages)
	}
	icon := loaded.Packages[0].Icon
	if !bytes.Equal(icon.Data, png) || icon.MediaType != "image/png" {
		t.Errorf("package icon is %q (%s), want the PNG bytes %q", icon.Data, icon.MediaType, png)
	}

	b.CSV.Spec.Icon[0].Data = "not base64!"
	if _, err := Build([]Package{{Name: "iconic", Entries: entries(b)}}, ""); err == nil {
		t.Error("an icon that is not base64 was accepted")
	}
}
