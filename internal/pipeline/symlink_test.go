package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderRefusesCommittedLinks: a catalog checkout whose rendered/,
// publish/ or overlay is a symbolic link to elsewhere is refused with the
// link's path, and nothing outside the checkout is deleted or written.
func TestRenderRefusesCommittedLinks(t *testing.T) {
	f := newFixture(t)
	for _, link := range []string{"rendered", "publish", "kustomize/clusters/global", "rendered/global"} {
		t.Run(strings.ReplaceAll(link, "/", "_"), func(t *testing.T) {
			dir, outside := t.TempDir(), t.TempDir()
			victim := filepath.Join(outside, "keep.yaml")
			if err := os.WriteFile(victim, []byte("kind: Keep\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			at := filepath.Join(dir, filepath.FromSlash(link))
			if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, at); err != nil {
				t.Fatal(err)
			}
			_, err := Render(context.Background(), RenderOptions{Source: f.source, CatalogDir: dir, DstRegistry: "reg.example.com/ops"})
			if err == nil || !strings.Contains(err.Error(), link+" is a symbolic link") {
				t.Errorf("err = %v, want the link %s refused", err, link)
			}
			ents, _ := os.ReadDir(outside)
			if len(ents) != 1 || ents[0].Name() != "keep.yaml" {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("outside the checkout now holds %v, want only keep.yaml", names)
			}
		})
	}
}
