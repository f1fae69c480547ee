package olm

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/operator-framework/operator-registry/alpha/action/migrations"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-publish/publish/internal/bundle"
)

// condensed is what Condense keeps of a bundle in bundle.Bundle.Catalog
// (JSON): its olm.bundle in FormatCSVMetadata without its image, and its
// installer rules (nil when Installer fails on the bundle).
type condensed struct {
	Bundle    declcfg.Bundle  `json:"bundle"`
	Installer *InstallerRules `json:"installer,omitempty"`
}

// Condense turns b, a bundle of package pkg just read whole (and linted),
// into what a FormatCSVMetadata catalog needs of it, so that a run holds
// each bundle's olm.bundle JSON instead of its objects: b.Catalog gets its
// olm.bundle, as BundleEntry and the bundle-object-to-csv-metadata
// migration make it (Build adds the bundle image, known only once
// mirrored), and its installer rules (Installer); then b is made slim
// (bundle.Slim) but keeps the CSV's description and icon, which the
// olm.package of the newest version and NotesFile take. It returns false,
// leaving b whole, when the olm.bundle cannot be made: Build then reports
// why, naming the manifest. A catalog in FormatBundleObject needs the
// whole bundle: do not condense for one.
func Condense(pkg string, b *bundle.Bundle) bool {
	if b == nil || b.CSV == nil || b.Loaded == nil {
		return false
	}
	ob, err := BundleEntry(pkg, Entry{Bundle: b})
	if err != nil {
		return false
	}
	// The migration converts only a bundle with an image: a placeholder,
	// dropped again (relatedImages were made without one).
	ob.Image = "condensed"
	cfg := &declcfg.DeclarativeConfig{Bundles: []declcfg.Bundle{ob}}
	m, err := migrations.NewMigrations(csvMetadataMigration)
	if err != nil || m.Migrate(cfg) != nil {
		return false
	}
	c := condensed{Bundle: cfg.Bundles[0]}
	c.Bundle.Image, c.Bundle.CsvJSON = "", ""
	if r, err := Installer(b); err == nil {
		c.Installer = &r
	}
	data, err := json.Marshal(c)
	if err != nil {
		return false
	}
	desc, icon := b.CSV.Spec.Description, b.CSV.Spec.Icon
	b.Slim()
	b.CSV.Spec.Description, b.CSV.Spec.Icon = desc, icon
	b.Catalog = data
	return true
}

// condensedOf returns what Condense kept of b; false when b was not
// condensed (or its Catalog is not Condense's JSON).
func condensedOf(b *bundle.Bundle) (condensed, bool) {
	if b == nil || len(b.Catalog) == 0 {
		return condensed{}, false
	}
	var c condensed
	if err := json.Unmarshal(b.Catalog, &c); err != nil || c.Bundle.Schema != declcfg.SchemaBundle {
		return condensed{}, false
	}
	return c, true
}

// condensedEntry is the olm.bundle of a condensed entry e of package pkg:
// the one Condense kept, with e.Image as its image and among its
// relatedImages as relatedImages adds it (once, unnamed, unless an
// image of the CSV is the same), sorted again.
func condensedEntry(pkg string, e Entry, c condensed) (declcfg.Bundle, error) {
	out := c.Bundle
	if out.Package != pkg {
		return declcfg.Bundle{}, fmt.Errorf("bundle %s was condensed for package %s, not %s", out.Name, out.Package, pkg)
	}
	out.Image = e.Image
	if e.Image == "" {
		return out, nil
	}
	for _, ri := range out.RelatedImages {
		if ri.Image == e.Image {
			return out, nil
		}
	}
	out.RelatedImages = append(append([]declcfg.RelatedImage(nil), out.RelatedImages...), declcfg.RelatedImage{Image: e.Image})
	sort.SliceStable(out.RelatedImages, func(i, j int) bool {
		a, b := out.RelatedImages[i], out.RelatedImages[j]
		if a.Image != b.Image {
			return a.Image < b.Image
		}
		return a.Name < b.Name
	})
	return out, nil
}
