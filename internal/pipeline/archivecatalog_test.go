package pipeline

import (
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/operator-publish/publish/internal/archive"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
)

// TestCatalogLocations: package records the Artifacts the overlay left as
// the state has them (the connected side's), not those it patched; push
// refuses those that are not where it puts the bundles: another host, or
// the same host under another prefix, and takes a catalog whose Artifacts
// are already the site's.
func TestCatalogLocations(t *testing.T) {
	arts := []model.ArtifactRecord{{Name: "a", Registry: "conn.example.com", Repository: "mirror/a/bundle"}, {Name: "b", Registry: "conn.example.com", Repository: "mirror/b/bundle"}}
	files := map[string][]byte{
		"a/artifact_a.yaml":        []byte("kind: Artifact\nspec:\n  registry: conn.example.com\n  repository: mirror/a/bundle\n"),
		"b/artifact_b.yaml":        []byte("kind: Artifact\nspec:\n  registry: registry.site.internal\n  repository: mirror/b/bundle\n"), // patched
		"a/artifactversion_a.yaml": []byte("kind: ArtifactVersion\n"),
	}
	locs := catalogLocations(files, arts)
	if !slices.Equal(locs, []string{"conn.example.com/mirror/a/bundle"}) {
		t.Fatalf("locations %v", locs)
	}
	entry := func(locs ...string) archive.IndexEntry {
		return archive.IndexEntry{Catalog: "edge", Desc: v1.Descriptor{Annotations: map[string]string{archive.AnnotationCatalogLocations: strings.Join(locs, ",")}}}
	}
	images := []archive.IndexEntry{{Ref: "quay.example.com/a/bundle:v1", Bundle: true}}
	for _, tc := range []struct {
		dst, loc, want string
	}{
		{"site.example.com:5000/ops", "conn.example.com/mirror/a/bundle", "connected side's registry conn.example.com"},
		{"conn.example.com/ops", "conn.example.com/mirror/a/bundle", "pushed to conn.example.com/ops/a/bundle"},
		{"site.example.com:5000/ops", "conn.example.com/mirror/z/bundle", "conn.example.com/mirror/z/bundle"}, // not in the archive: by host
		{"conn.example.com/mirror", "conn.example.com/mirror/a/bundle", ""},
		{"conn.example.com/mirror", "conn.example.com/mirror/z/bundle", ""},
	} {
		mc, err := mirror.New(mirror.Options{DstRegistry: tc.dst})
		if err != nil {
			t.Fatal(err)
		}
		err = checkCatalogLocations(mc, entry(tc.loc), images)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "kustomize/clusters/edge")) {
			t.Errorf("push to %s of a catalog naming %s: %v, want %q", tc.dst, tc.loc, err, tc.want)
		}
	}
	if err := checkCatalogLocations(nil, archive.IndexEntry{Catalog: "edge"}, images); err != nil {
		t.Errorf("no locations recorded: %v", err)
	}
}
