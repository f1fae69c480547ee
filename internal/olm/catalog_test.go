package olm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/testenv"
)

// corpusEntries loads every bundle of the shared corpus that has
// metadata/ (the bundle format) straight from disk, grouped by package.
func corpusEntries(t testing.TB) map[string][]Entry {
	t.Helper()
	shared := testenv.RequireShared(t)
	dirs, err := testenv.CorpusBundleDirs(filepath.Join(shared, "corpus"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]Entry{}
	seen := map[string]bool{}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "metadata", "annotations.yaml")); err != nil {
			continue
		}
		b, err := bundle.Load(d)
		if err != nil {
			t.Logf("skipped (BuildCorpus repairs it): %s: %v", d, err)
			continue
		}
		if seen[b.CSVName] {
			t.Logf("skipped (a duplicate version): %s", d)
			continue
		}
		seen[b.CSVName] = true
		digest := sha256.Sum256([]byte(d))
		out[b.Package] = append(out[b.Package], Entry{Bundle: b, Image: "registry.example/bundles/" + b.Package + "@sha256:" + hex.EncodeToString(digest[:])})
	}
	if len(out) == 0 {
		t.Fatal("no bundle in the corpus")
	}
	return out
}

func packagesOf(m map[string][]Entry) []Package {
	var ps []Package
	for n, es := range m {
		ps = append(ps, Package{Name: n, Entries: es})
	}
	return ps
}

// TestBuildCorpusCatalog builds the catalog of every corpus bundle (read
// from disk: no registry), checks it loads back and validates with
// operator-registry, does not depend on the order of its input, and is
// rebuilt byte for byte from its own entries.
func TestBuildCorpusCatalog(t *testing.T) {
	testenv.Short(t, "corpus test")
	entries := corpusEntries(t)
	cfg, err := Build(packagesOf(entries))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Packages) != len(entries) {
		t.Errorf("%d packages in the catalog, want %d", len(cfg.Packages), len(entries))
	}
	n := 0
	for _, es := range entries {
		n += len(es)
	}
	if len(cfg.Bundles) != n {
		t.Errorf("%d bundles in the catalog, want %d", len(cfg.Bundles), n)
	}
	files, err := Files(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Deterministic: the same input in another order gives the same bytes.
	ps := packagesOf(entries)
	for i, j := 0, len(ps)-1; i < j; i, j = i+1, j-1 {
		ps[i], ps[j] = ps[j], ps[i]
	}
	cfg2, err := Build(ps)
	if err != nil {
		t.Fatal(err)
	}
	files2, _ := Files(cfg2)
	for p, data := range files {
		if !bytes.Equal(data, files2[p]) {
			t.Errorf("%s differs between two builds", p)
		}
		// What we write loads back with operator-registry and validates.
		back, err := declcfg.LoadReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if err := Validate(back); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}

	// The entries of a published catalog rebuild it byte for byte without
	// the bundles (what a run does for unchanged versions).
	prev, err := previousOf(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if prev.Len() != n {
		t.Fatalf("%d reusable bundles, want %d", prev.Len(), n)
	}
	var again []Package
	for name, es := range entries {
		p := Package{Name: name}
		for _, e := range es {
			r, ok := prev.Entry(e.Image)
			if !ok {
				t.Fatalf("%s not reusable", e.Image)
			}
			p.Entries = append(p.Entries, r)
		}
		again = append(again, p)
	}
	cfg3, err := Build(again)
	if err != nil {
		t.Fatal(err)
	}
	files3, _ := Files(cfg3)
	for p, data := range files {
		if !bytes.Equal(data, files3[p]) {
			t.Errorf("%s differs when rebuilt from the published catalog", p)
		}
	}
}

// BenchmarkCatalogCorpus builds the catalog of the corpus bundles (from
// disk) and its image layer with the serve cache: the work a run of an
// olm cluster adds after the bundles are read.
func BenchmarkCatalogCorpus(b *testing.B) {
	entries := corpusEntries(b)
	ps := packagesOf(entries)
	b.ResetTimer()
	for b.Loop() {
		cfg, err := Build(ps)
		if err != nil {
			b.Fatal(err)
		}
		files, err := Files(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Layer(context.Background(), files, 1001); err != nil {
			b.Fatal(err)
		}
	}
}
