package olm

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	semver "github.com/blang/semver/v4"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/registry"
)

// maxCatalogBytes bounds what LoadPrevious reads from one catalog.json.
const maxCatalogBytes = 1 << 30

// Previous is a catalog published before, indexed by bundle image: its
// olm.bundle entries can be reused for bundles that did not change, so that
// a run does not read every bundle image again.
type Previous struct {
	entries map[string]Entry
}

// LoadPrevious reads the file-based catalog of the catalog image ref (for
// an image index, its first image) with opts, and its NotesFile. The
// catalog is the top layer, as Push writes it; a catalog image built
// otherwise is an error.
func LoadPrevious(ctx context.Context, ref name.Reference, opts ...remote.Option) (*Previous, error) {
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return nil, err
	}
	var img v1.Image
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		first, ok := registry.FirstRunnable(im)
		if !ok {
			return nil, errors.New("the image index holds no image")
		}
		if img, err = idx.Image(first.Digest); err != nil {
			return nil, err
		}
	} else if img, err = desc.Image(); err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil || len(layers) == 0 {
		return nil, fmt.Errorf("no layers: %v", err)
	}
	rc, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	cfg := &declcfg.DeclarativeConfig{}
	var notesData []byte
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg && h.Name == NotesFile {
			if notesData, err = io.ReadAll(io.LimitReader(tr, maxCatalogBytes)); err != nil {
				return nil, err
			}
			continue
		}
		if h.Typeflag != tar.TypeReg || !strings.HasPrefix(h.Name, ConfigsDir+"/") || path.Base(h.Name) != "catalog.json" {
			continue
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxCatalogBytes))
		if err != nil {
			return nil, err
		}
		c, err := declcfg.LoadReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h.Name, err)
		}
		cfg.Packages = append(cfg.Packages, c.Packages...)
		cfg.Channels = append(cfg.Channels, c.Channels...)
		cfg.Bundles = append(cfg.Bundles, c.Bundles...)
		cfg.Deprecations = append(cfg.Deprecations, c.Deprecations...)
	}
	n, err := parseNotes(notesData)
	if err != nil {
		return nil, err
	}
	return previousOf(cfg, n)
}

// previousOf indexes cfg's bundles by image, with the facts Build needs
// (CSV, channels, default channel) recovered from the catalog: from the
// CSV's olm.bundle.object, or from its olm.csv.metadata and the bundle's
// note in n (NotesFile). A bundle with neither (a catalog not built by us)
// is left out: its bundle is read again.
func previousOf(cfg *declcfg.DeclarativeConfig, n *notes) (*Previous, error) {
	channels := map[[2]string][]string{} // package, bundle -> channels
	for _, c := range cfg.Channels {
		for _, e := range c.Entries {
			k := [2]string{c.Package, e.Name}
			channels[k] = append(channels[k], c.Name)
		}
	}
	defaults := map[string]string{}
	for _, p := range cfg.Packages {
		defaults[p.Name] = p.DefaultChannel
	}
	// The bundles' deprecation messages, which the next catalog keeps
	// for a bundle still deprecated (Entry.Deprecated).
	messages := map[[2]string]string{}
	for _, d := range cfg.Deprecations {
		for _, e := range d.Entries {
			if e.Reference.Schema == declcfg.SchemaBundle {
				messages[[2]string{d.Package, e.Reference.Name}] = e.Message
			}
		}
	}
	p := &Previous{entries: map[string]Entry{}}
	for i := range cfg.Bundles {
		b := cfg.Bundles[i]
		csv, csvJSON, err := previousCSV(b, n)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", b.Name, err)
		}
		if csv == nil {
			continue // not one of ours: read the bundle again
		}
		chs := channels[[2]string{b.Package, b.Name}]
		if len(chs) == 0 {
			continue
		}
		def := defaults[b.Package]
		if !contains(chs, def) {
			def = chs[0]
		}
		prebuilt := b
		prebuilt.CsvJSON = csvJSON
		var installer *InstallerRules
		var delisted time.Time
		if n != nil {
			installer = n.Bundles[b.Image].Installer
			if d := n.Bundles[b.Image].DelistedSince; d != nil {
				delisted = *d
			}
		}
		p.entries[b.Image] = Entry{
			installer: installer, DelistedSince: delisted, Deprecated: messages[[2]string{b.Package, b.Name}],
			Image: b.Image,
			Bundle: &bundle.Bundle{
				CSV: csv, CSVName: csv.Name, Version: csv.Spec.Version.String(), Package: b.Package,
				Channels: chs, DefaultChannel: def, Description: csv.Annotations["description"], DisplayName: csv.Spec.DisplayName,
			},
			prebuilt: &prebuilt,
		}
	}
	return p, nil
}

// previousCSV recovers the CSV of a published olm.bundle: the whole CSV
// from its olm.bundle.object (csvJSON is its JSON, for the csv.metadata
// migration), or, from its olm.csv.metadata property, its name, version
// (the olm.package property), metadata, description and install modes, with spec.replaces,
// spec.skips and spec.icon from the bundle's note. nil when neither is
// there.
func previousCSV(b declcfg.Bundle, n *notes) (csv *v1alpha1.ClusterServiceVersion, csvJSON string, err error) {
	var md *property.CSVMetadata
	pkgVersion := ""
	for _, prop := range b.Properties {
		switch prop.Type {
		case property.TypeBundleObject:
			var obj property.BundleObject
			if err := json.Unmarshal(prop.Value, &obj); err != nil {
				return nil, "", err
			}
			var head struct {
				Kind string `json:"kind"`
			}
			if json.Unmarshal(obj.Data, &head) != nil || head.Kind != "ClusterServiceVersion" {
				continue
			}
			csv = &v1alpha1.ClusterServiceVersion{}
			if err := json.Unmarshal(obj.Data, csv); err != nil {
				return nil, "", fmt.Errorf("CSV: %w", err)
			}
			csvJSON = string(obj.Data)
		case property.TypeCSVMetadata:
			md = &property.CSVMetadata{}
			if err := json.Unmarshal(prop.Value, md); err != nil {
				return nil, "", fmt.Errorf("%s: %w", prop.Type, err)
			}
		case property.TypePackage:
			var pkg property.Package
			if err := json.Unmarshal(prop.Value, &pkg); err != nil {
				return nil, "", fmt.Errorf("%s: %w", prop.Type, err)
			}
			pkgVersion = pkg.Version
		}
	}
	if csv != nil {
		return csv, csvJSON, nil
	}
	if md == nil || n == nil {
		return nil, "", nil
	}
	note, ok := n.Bundles[b.Image]
	if !ok {
		return nil, "", nil
	}
	v, err := semver.ParseTolerant(pkgVersion)
	if err != nil {
		return nil, "", fmt.Errorf("olm.package version %q: %w", pkgVersion, err)
	}
	csv = &v1alpha1.ClusterServiceVersion{}
	csv.Name = b.Name
	csv.Annotations = md.Annotations
	csv.Labels = md.Labels
	csv.Spec.Version = version.OperatorVersion{Version: v}
	csv.Spec.Description = md.Description
	csv.Spec.DisplayName = md.DisplayName
	csv.Spec.InstallModes = md.InstallModes
	csv.Spec.Replaces = note.Replaces
	csv.Spec.Skips = note.Skips
	if note.Icon != "" {
		icon, ok := n.Icons[note.Icon]
		if !ok {
			return nil, "", fmt.Errorf("%s: icon %s is missing", NotesFile, note.Icon)
		}
		csv.Spec.Icon = []v1alpha1.Icon{{Data: icon.Data, MediaType: icon.MediaType}}
	}
	return csv, "", nil
}

// Entry returns the entry of the bundle image (host/repo@sha256:...) in
// the previous catalog, ready for Build in format f, and whether there is
// one. An entry published as olm.csv.metadata serves FormatCSVMetadata
// only (the manifests are not in the catalog); one published as
// olm.bundle.object serves both (Build migrates it).
func (p *Previous) Entry(image string, f Format) (Entry, bool) {
	if p == nil {
		return Entry{}, false
	}
	e, ok := p.entries[image]
	if ok && f == FormatBundleObject && !hasProperty(*e.prebuilt, property.TypeBundleObject) {
		return Entry{}, false
	}
	return e, ok
}

// RenderKeyPrefix starts the render key of a cluster published to OLM in
// its catalog state (publish/state/<cluster>.yaml rendered): "olm <catalog
// image by digest>".
const RenderKeyPrefix = "olm "

// Kept returns the bundle images (host/repo@sha256:...) the previous
// catalog keeps deprecated for their deprecation period (delisted, with a
// delistedSince in its NotesFile), as a set.
func (p *Previous) Kept() map[string]bool {
	out := map[string]bool{}
	if p == nil {
		return out
	}
	for img, e := range p.entries {
		if !e.DelistedSince.IsZero() {
			out[img] = true
		}
	}
	return out
}

// Len is the number of reusable bundles.
func (p *Previous) Len() int {
	if p == nil {
		return 0
	}
	return len(p.entries)
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
