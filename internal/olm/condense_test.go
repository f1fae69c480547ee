package olm

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/operator-publish/publish/internal/testenv"
)

// TestCondenseCorpusCatalog condenses every corpus bundle (Condense, what
// the olm target does as each bundle is read in the default format) and
// checks that the catalog and NotesFile built from the condensed bundles
// are byte for byte those built from the whole ones, with the same
// installer rules, that the condensed bundles hold no objects and no CRD
// schemas, and that a catalog in olm.bundle.object refuses them (it needs
// the whole bundles).
func TestCondenseCorpusCatalog(t *testing.T) {
	testenv.Short(t, "corpus test")
	entries := corpusEntries(t)
	whole, err := Build(packagesOf(entries), FormatCSVMetadata)
	if err != nil {
		t.Fatal(err)
	}
	wholeFiles, err := Files(whole)
	if err != nil {
		t.Fatal(err)
	}
	wholeNotes, err := Notes(packagesOf(entries))
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]InstallerRules{}
	for _, es := range entries {
		for _, e := range es {
			if r, ok := e.Installer(); ok {
				rules[e.Image] = r
			}
		}
	}

	n, size := 0, 0
	for pkg, es := range entries {
		for _, e := range es {
			if !Condense(pkg, e.Bundle) {
				t.Fatalf("%s: %s was not condensed", pkg, e.Bundle.CSVName)
			}
			n++
			b := e.Bundle
			size += len(b.Catalog)
			if len(b.Loaded.Objects) != 0 || b.Catalog == nil {
				t.Fatalf("%s: condensed, it keeps %d objects (catalog %d bytes)", b.CSVName, len(b.Loaded.Objects), len(b.Catalog))
			}
			for _, c := range b.Loaded.V1CRDs {
				for _, v := range c.Spec.Versions {
					if v.Schema != nil {
						t.Fatalf("%s: CRD %s keeps its schema", b.CSVName, c.Name)
					}
				}
			}
			r, ok := e.Installer()
			if want, had := rules[e.Image]; ok != had || !reflect.DeepEqual(r, want) {
				t.Errorf("%s: installer rules %v (%v), want %v (%v)", b.CSVName, r, ok, want, had)
			}
		}
	}
	t.Logf("%d bundles condensed: %d KiB of olm.bundle JSON", n, size/1024)
	cfg, err := Build(packagesOf(entries), FormatCSVMetadata)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(wholeFiles) {
		t.Errorf("%d files from the condensed bundles, %d from the whole ones", len(files), len(wholeFiles))
	}
	for p, data := range wholeFiles {
		if !bytes.Equal(data, files[p]) {
			t.Errorf("%s differs between the whole and the condensed bundles", p)
		}
	}
	notes, err := Notes(packagesOf(entries))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(notes, wholeNotes) {
		t.Errorf("%s differs between the whole and the condensed bundles", NotesFile)
	}
	if _, err := Build(packagesOf(entries), FormatBundleObject); err == nil {
		t.Error("an olm.bundle.object catalog was built from condensed bundles")
	}
}
