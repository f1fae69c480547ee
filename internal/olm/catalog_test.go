package olm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
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
		e := Entry{Bundle: b, Image: "registry.example/bundles/" + b.Package + "@sha256:" + hex.EncodeToString(digest[:])}
		if err := opmRefuses(b.Package, e); err != nil {
			t.Logf("skipped (opm refuses it; lint does too): %s: %v", d, err)
			continue
		}
		out[b.Package] = append(out[b.Package], e)
	}
	if len(out) == 0 {
		t.Fatal("no bundle in the corpus")
	}
	return out
}

// opmRefuses returns why operator-registry's model refuses a catalog of
// bundle e alone, when it is for a reason of the bundle itself that lint
// reports too: a skipRange that is no semver range (repo/skip-range), a
// related image that is no image reference. Corpus bundles with them are
// left out; opm v1.73.0 refuses a catalog that holds one.
func opmRefuses(pkg string, e Entry) error {
	_, err := Build([]Package{{Name: pkg, Entries: []Entry{e}}}, FormatBundleObject)
	if err != nil && (strings.Contains(err.Error(), "invalid skipRange") || strings.Contains(err.Error(), "invalid image pull spec")) {
		return err
	}
	return nil
}

func packagesOf(m map[string][]Entry) []Package {
	var ps []Package
	for n, es := range m {
		ps = append(ps, Package{Name: n, Entries: es})
	}
	return ps
}

// TestBuildCorpusCatalog builds the catalog of every corpus bundle (read
// from disk: no registry) in each format, checks it loads back and
// validates with operator-registry, does not depend on the order of its
// input, and is rebuilt byte for byte from its own entries and notes
// (what a run does for unchanged versions), also across formats.
func TestBuildCorpusCatalog(t *testing.T) {
	testenv.Short(t, "corpus test")
	entries := corpusEntries(t)
	n := 0
	for _, es := range entries {
		n += len(es)
	}
	built := map[Format]map[string][]byte{}
	prevs := map[Format]*Previous{}
	for _, f := range []Format{FormatCSVMetadata, FormatBundleObject} {
		t.Run(string(f), func(t *testing.T) {
			cfg, err := Build(packagesOf(entries), f)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Packages) != len(entries) {
				t.Errorf("%d packages in the catalog, want %d", len(cfg.Packages), len(entries))
			}
			if len(cfg.Bundles) != n {
				t.Errorf("%d bundles in the catalog, want %d", len(cfg.Bundles), n)
			}
			other := map[Format]string{FormatCSVMetadata: property.TypeBundleObject, FormatBundleObject: property.TypeCSVMetadata}[f]
			for _, b := range cfg.Bundles {
				if !hasProperty(b, string(f)) || hasProperty(b, other) {
					t.Fatalf("bundle %s: want %s properties and no %s", b.Name, f, other)
				}
			}
			files, err := Files(cfg)
			if err != nil {
				t.Fatal(err)
			}
			built[f] = files
			// Deterministic: the same input in another order gives the same
			// bytes (the order does not depend on the format: checked once).
			if f == FormatCSVMetadata {
				ps := packagesOf(entries)
				for i, j := 0, len(ps)-1; i < j; i, j = i+1, j-1 {
					ps[i], ps[j] = ps[j], ps[i]
				}
				cfg2, err := Build(ps, f)
				if err != nil {
					t.Fatal(err)
				}
				files2, _ := Files(cfg2)
				for p, data := range files {
					if !bytes.Equal(data, files2[p]) {
						t.Errorf("%s differs between two builds", p)
					}
				}
			}
			// What we write loads back with operator-registry and validates:
			// the catalog as LoadPrevious reads it.
			var back declcfg.DeclarativeConfig
			for p, data := range files {
				c, err := declcfg.LoadReader(bytes.NewReader(data))
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				back.Packages = append(back.Packages, c.Packages...)
				back.Channels = append(back.Channels, c.Channels...)
				back.Bundles = append(back.Bundles, c.Bundles...)
			}
			if err := Validate(&back); err != nil {
				t.Error(err)
			}
			notesData, err := Notes(packagesOf(entries))
			if err != nil {
				t.Fatal(err)
			}
			nt, err := parseNotes(notesData)
			if err != nil {
				t.Fatal(err)
			}
			prev, err := previousOf(&back, nt)
			if err != nil {
				t.Fatal(err)
			}
			if prev.Len() != n {
				t.Fatalf("%d reusable bundles, want %d", prev.Len(), n)
			}
			prevs[f] = prev
			// Without the notes an olm.csv.metadata catalog is not reusable.
			if f == FormatCSVMetadata {
				if bare, _ := previousOf(&back, nil); bare.Len() != 0 {
					t.Errorf("%d bundles reusable without %s", bare.Len(), NotesFile)
				}
			}
		})
	}
	// The entries of a published catalog rebuild it byte for byte without
	// the bundles, and an olm.bundle.object catalog serves an
	// olm.csv.metadata one; the reverse needs the bundles.
	for _, tc := range []struct{ from, to Format }{
		{FormatCSVMetadata, FormatCSVMetadata}, {FormatBundleObject, FormatBundleObject}, {FormatBundleObject, FormatCSVMetadata},
	} {
		t.Run(string(tc.from)+" reused as "+string(tc.to), func(t *testing.T) {
			prev := prevs[tc.from]
			if prev == nil {
				t.Skip("the build failed")
			}
			var again []Package
			for name, es := range entries {
				p := Package{Name: name}
				for _, e := range es {
					r, ok := prev.Entry(e.Image, tc.to)
					if !ok {
						t.Fatalf("%s not reusable", e.Image)
					}
					p.Entries = append(p.Entries, r)
				}
				again = append(again, p)
			}
			cfg3, err := Build(again, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			files3, _ := Files(cfg3)
			for p, data := range built[tc.to] {
				if !bytes.Equal(data, files3[p]) {
					t.Errorf("%s differs when rebuilt from the published catalog", p)
					firstDiff(t, data, files3[p])
				}
			}
			// The notes of the reused entries are the notes again.
			n1, _ := Notes(packagesOf(entries))
			n2, _ := Notes(again)
			if !bytes.Equal(n1, n2) {
				t.Errorf("%s differs when rebuilt from the published catalog", NotesFile)
			}
		})
	}
	if prev := prevs[FormatCSVMetadata]; prev != nil {
		for _, es := range entries {
			if _, ok := prev.Entry(es[0].Image, FormatBundleObject); ok {
				t.Errorf("%s: an olm.csv.metadata entry is offered for an olm.bundle.object catalog", es[0].Image)
			}
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
		cfg, err := Build(ps, "")
		if err != nil {
			b.Fatal(err)
		}
		files, err := Files(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Layer(context.Background(), files, 1001, true); err != nil {
			b.Fatal(err)
		}
	}
}
