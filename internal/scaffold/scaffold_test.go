package scaffold

import (
	"encoding/base64"
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
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
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
	return pushTinyEdited(t, host, func(s string) string { return s })
}

// pushTinyEdited is pushTiny with edit applied to the text of every file of
// the bundle (after REGISTRY is replaced).
func pushTinyEdited(t *testing.T, host string, edit func(string) string) string {
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
		return os.WriteFile(out, []byte(edit(strings.ReplaceAll(string(data), "REGISTRY", host))), 0o644)
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
	_, _, err := Manifest(&bundle.Bundle{}, "r.example.com/x:v1", nil)
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "by hand") {
		t.Errorf("%v", err)
	}
}

// TestCreateLeavesOutRefused: what the CSV has and the manifest rules would
// refuse (an icon of 634 KiB, a description over 128 KiB) is left out of the created manifest, with a note naming the
// field, so that the manifest passes publish lint as the help says.
func TestCreateLeavesOutRefused(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 634<<10)...)
	ref := pushTinyEdited(t, host, func(s string) string {
		s = strings.Replace(s, "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAxIDEiLz4=", base64.StdEncoding.EncodeToString(png), 1)
		s = strings.Replace(s, "  description: A tiny operator for tests.\n", "  description: "+strings.Repeat("long ", 30<<10)+"\n", 1)
		return s
	})
	repo := t.TempDir()
	var notes []string
	o := Options{Dir: filepath.Join(repo, "packages", "tiny", "1.0.0"), Artifact: ref, Mirror: mirror.Options{PlainHTTP: true},
		Note: func(s string) { notes = append(notes, s) }}
	path, err := Create(t.Context(), o)
	if err != nil {
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
	data, _ := os.ReadFile(path)
	m, err := manifest.Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec.Info.Icon != "" || m.Spec.Info.Description != "" || len(m.Spec.Info.Links) != 1 || m.Spec.Info.DisplayName != "Tiny" {
		t.Errorf("icon %d bytes, description %d bytes: want both left out, the rest kept:\n%.300s", len(m.Spec.Info.Icon), len(m.Spec.Info.Description), data)
	}
	all := strings.Join(notes, "\n")
	for _, w := range []string{"spec.info.icon left out", "634.0 KiB", lint.RuleManifestIcon, "spec.info.description left out", lint.RuleManifestFieldSize} {
		if !strings.Contains(all, w) {
			t.Errorf("notes lack %q:\n%s", w, all)
		}
	}
	if len(notes) != 2 {
		t.Errorf("%d notes, want 2 (one a field):\n%s", len(notes), all)
	}
}

// TestManifestLeavesOutLinks: CSV links the manifest rules refuse (no name,
// a relative URL) are left out, one note each naming the entry; the good
// link is kept.
func TestManifestLeavesOutLinks(t *testing.T) {
	csv := &v1alpha1.ClusterServiceVersion{}
	csv.Spec.Links = []v1alpha1.AppLink{{Name: "Docs", URL: "https://example.com/docs"}, {URL: "https://example.com/x"}, {Name: "Rel", URL: "docs/index.html"}}
	data, notes, err := Manifest(&bundle.Bundle{Package: "op", Version: "1.0.0", CSV: csv}, "r.example.com/op:v1.0.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse("manifest.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Spec.Info.Links) != 1 || m.Spec.Info.Links[0].Name != "Docs" {
		t.Errorf("links %v, want only Docs", m.Spec.Info.Links)
	}
	all := strings.Join(notes, "\n")
	if len(notes) != 2 || !strings.Contains(all, "spec.info.links[1] left out") || !strings.Contains(all, "spec.info.links[2] left out") {
		t.Errorf("notes:\n%s", all)
	}
	for _, f := range lint.ManifestFile("manifest.yaml", data) {
		if f.Severity == lint.Error {
			t.Errorf("lint: %s", f)
		}
	}
}
