package scaffold

import (
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/pipeline"
)

// pushTiny builds the tiny test bundle (testdata/tiny/1.0.0, its images
// named below host) and pushes it to host; it returns the reference.
func pushTiny(t *testing.T, host string) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir("testdata/tiny/1.0.0", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("testdata/tiny/1.0.0", p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(out), 0o755)
		return os.WriteFile(out, []byte(strings.ReplaceAll(string(data), "REGISTRY", host)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := bundle.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref := host + "/tiny/bundle:v1.0.0"
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestCreate(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ref := pushTiny(t, host)
	o := Options{Dir: filepath.Join(t.TempDir(), "tiny", "1.0.0"), Artifact: ref, Mirror: mirror.Options{PlainHTTP: true}}

	path, err := Create(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	m, err := manifest.Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	if m.Artifact != "tiny" || m.Version.String() != "1.0.0" || m.Spec.Artifact != ref || len(m.Spec.RelatedImages) == 0 ||
		len(m.Spec.Arch) == 0 || m.Spec.Info.DisplayName != "Tiny" || m.Spec.Info.Icon == "" || len(m.Spec.Info.Links) != 1 {
		t.Errorf("manifest:\n%s", data)
	}

	// An existing manifest is kept unless Force: an input error naming --force.
	_, err = Create(t.Context(), o)
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "--force") {
		t.Errorf("overwrite: %v, want an input error naming --force", err)
	}
	o.Force, o.Platforms = true, []string{"linux/arm64"}
	if _, err := Create(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); !strings.Contains(string(data), "linux/arm64") {
		t.Errorf("--platforms not in spec.arch:\n%s", data)
	}

	// A bundle that does not exist and a malformed reference are input errors.
	for _, bad := range []string{host + "/tiny/bundle:v9.9.9", "Not A Reference"} {
		_, err := Create(t.Context(), Options{Dir: t.TempDir(), Artifact: bad, Mirror: mirror.Options{PlainHTTP: true}})
		if !errors.As(err, &ie) {
			t.Errorf("%s: %v, want an input error", bad, err)
		}
	}

	// publish lint on a package repo holding only the created manifest.
	repo := t.TempDir()
	if _, err := Create(t.Context(), Options{Dir: filepath.Join(repo, "packages", "tiny", "1.0.0"), Artifact: ref, Mirror: mirror.Options{PlainHTTP: true}}); err != nil {
		t.Fatal(err)
	}
	fs, err := pipeline.Lint(t.Context(), pipeline.LintOptions{Source: repo, PackagesDir: "packages", Mirror: mirror.Options{PlainHTTP: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Severity == lint.Error {
			t.Errorf("lint: %s", f)
		}
	}
}

// TestManifestNoPackage: a CSV without package name or version cannot be
// scaffolded: an input error saying to write the manifest by hand.
func TestManifestNoPackage(t *testing.T) {
	_, err := Manifest(&bundle.Bundle{}, "r.example.com/x:v1", nil)
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "by hand") {
		t.Errorf("%v", err)
	}
}
