// Package olm publishes to upstream Operator Lifecycle Manager (OLM): a
// file-based catalog (FBC, https://olm.operatorframework.io/docs/reference/file-based-catalogs/)
// built from the published bundles and validated with operator-registry's
// declarative-config model, a catalog image holding it under /configs on
// top of an opm base image, built without a daemon, and a CatalogSource that
// points a cluster at that image by digest.
//
// The olm.bundle entries are what `opm render` of the bundle image gives
// (operator-registry v1.73.0, alpha/action/render.go and
// pkg/registry/registry_to_model.go): the same properties (olm.package,
// olm.gvk, olm.gvk.required, olm.package.required, metadata/properties.yaml,
// then the manifests) in the same order, and the same relatedImages. The
// manifests are one olm.csv.metadata property by default, what `opm render
// --migrate-level bundle-object-to-csv-metadata` writes (the form OpenShift
// 4.17 and later catalogs require), or one olm.bundle.object per manifest
// (FormatBundleObject, for OLM releases that need them).
package olm

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	semver "github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/action/migrations"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-publish/publish/internal/bundle"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Entry is one published version of a package: its bundle, as read by
// internal/bundle, and the reference OLM pulls it from.
type Entry struct {
	Bundle *bundle.Bundle
	// Image is the bundle image reference written into the catalog: the
	// destination repository by digest (host/repo@sha256:...).
	Image string
	// Source names where the entry comes from in error messages, such as
	// the PackageManifest's file:line (default: Image).
	Source string
	// Deprecated, when set, is its olm.deprecations message (deprecations.go),
	// DelistedSince when a delisted entry kept for its deprecation period
	// was delisted (zero for a listed one; kept in NotesFile).
	Deprecated    string
	DelistedSince time.Time
	// prebuilt is the olm.bundle of a previous catalog (Previous.Entry);
	// Bundle then holds what Build needs of the CSV and channels only, as
	// a condensed Bundle does (Condense: its olm.bundle is in
	// Bundle.Catalog).
	prebuilt *declcfg.Bundle
	// installer are the installer rules of a previous catalog's entry,
	// from its NotesFile (nil: not recorded).
	installer *InstallerRules
}

// Installer returns the installer rules of e's bundle (Installer): derived
// from the bundle when it was read (by Condense for a condensed one), else recorded in the last catalog
// image's NotesFile; false when e was taken from a catalog image that did
// not record them (its bundle must be read again).
func (e Entry) Installer() (InstallerRules, bool) {
	if e.prebuilt != nil {
		if e.installer == nil {
			return InstallerRules{}, false
		}
		return *e.installer, true
	}
	if c, ok := condensedOf(e.Bundle); ok {
		if c.Installer == nil {
			return InstallerRules{}, false
		}
		return *c.Installer, true
	}
	r, err := Installer(e.Bundle)
	return r, err == nil
}

// Format is how a catalog's olm.bundle entries carry the bundle's
// manifests; the values are the property types (publish.yaml
// clusters.<cluster>.olm.bundleFormat).
type Format string

const (
	// FormatCSVMetadata (the default) is one olm.csv.metadata property
	// with the CSV's metadata, as `opm render --migrate-level
	// bundle-object-to-csv-metadata` writes it: what catalogs for
	// OpenShift 4.17 and later must use, and smaller for OLM to serve.
	FormatCSVMetadata Format = property.TypeCSVMetadata
	// FormatBundleObject is one olm.bundle.object property per manifest
	// (the whole CSV and CRDs), for older OLM releases whose catalog
	// server does not read olm.csv.metadata.
	FormatBundleObject Format = property.TypeBundleObject
)

// ParseFormat returns the Format s names ("" is FormatCSVMetadata); the
// error lists the valid values.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case "", FormatCSVMetadata:
		return FormatCSVMetadata, nil
	case FormatBundleObject:
		return FormatBundleObject, nil
	}
	return "", fmt.Errorf("bundle format %q: want %s (the default) or %s", s, FormatCSVMetadata, FormatBundleObject)
}

// csvMetadataMigration is operator-registry's own migration from
// olm.bundle.object to olm.csv.metadata, the level `opm render
// --migrate-level` names.
const csvMetadataMigration = "bundle-object-to-csv-metadata"

// Package is one OLM package (= Artifact name) and its published versions;
// delisted versions are not in Entries, or are there with Entry.Deprecated.
type Package struct {
	Name    string
	Entries []Entry
	// Deprecated, when set, is the package's olm.deprecations message.
	Deprecated string
	// Semver, when set, generates the package's channels as opm's semver
	// template does (channel streams) instead of taking the channels its
	// bundles name.
	Semver *Semver
}

// Build returns the file-based catalog of pkgs: for every package with at
// least one entry, an olm.package, one olm.channel per channel its bundles
// name (metadata/annotations.yaml), and an olm.bundle per entry. Packages
// without entries are left out (a package whose last version was delisted
// disappears from the catalog). The bundles' manifests are written in
// format f ("" is FormatCSVMetadata): for FormatCSVMetadata the entries are
// migrated with operator-registry's bundle-object-to-csv-metadata migration,
// as `opm render --migrate-level` does. The result is sorted and validated
// (Validate); errors name the package and bundle.
func Build(pkgs []Package, f Format) (*declcfg.DeclarativeConfig, error) {
	f, err := ParseFormat(string(f))
	if err != nil {
		return nil, err
	}
	cfg := &declcfg.DeclarativeConfig{}
	var errs []error
	sorted := append([]Package(nil), pkgs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, p := range sorted {
		if len(p.Entries) == 0 {
			continue
		}
		if err := addPackage(cfg, p); err != nil {
			errs = append(errs, fmt.Errorf("package %s: %w", p.Name, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	cfg.Deprecations = deprecations(sorted, cfg.Channels)
	switch f {
	case FormatCSVMetadata:
		m, err := migrations.NewMigrations(csvMetadataMigration)
		if err != nil {
			return nil, err
		}
		if err := m.Migrate(cfg); err != nil {
			return nil, fmt.Errorf("file-based catalog: olm.csv.metadata: %w", err)
		}
		for i := range cfg.Bundles {
			if err := loaded(&cfg.Bundles[i]); err != nil {
				return nil, fmt.Errorf("package %s: bundle %s: %w", cfg.Bundles[i].Package, cfg.Bundles[i].Name, err)
			}
		}
	case FormatBundleObject:
		for _, b := range cfg.Bundles {
			if !hasProperty(b, property.TypeBundleObject) {
				return nil, fmt.Errorf("package %s: bundle %s has no olm.bundle.object properties (taken from a catalog in the olm.csv.metadata format): read the bundle again", b.Package, b.Name)
			}
		}
	}
	if err := Validate(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// loaded replaces b's property values by what operator-registry's loader
// (declcfg.LoadReader) makes of them: it re-encodes every blob through a
// map, so the keys of an olm.csv.metadata value come out sorted. The
// catalog is then what `opm render` of the catalog image prints, and a
// catalog loaded back (LoadPrevious) rebuilds the same bytes.
func loaded(b *declcfg.Bundle) error {
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	c, err := declcfg.LoadReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	if len(c.Bundles) != 1 {
		return fmt.Errorf("loads back as %d bundles", len(c.Bundles))
	}
	b.Properties = c.Bundles[0].Properties
	return nil
}

// versioned is one bundle of a package as its channels need it: its CSV
// name, its version and release as opm orders them, where it comes from
// (Entry.Source), and whether it is delisted (kept for its deprecation
// period).
type versioned struct {
	name     string
	version  *declcfg.VersionRelease
	source   string
	b        *bundle.Bundle
	delisted bool
}

func addPackage(cfg *declcfg.DeclarativeConfig, p Package) error {
	var vs []versioned
	first := len(cfg.Bundles)
	byCSV := map[string]string{}
	for _, e := range p.Entries {
		if e.Source == "" {
			e.Source = e.Image
		}
		if e.Bundle == nil || e.Bundle.CSV == nil {
			return fmt.Errorf("%s: bundle %s was not read", e.Source, e.Image)
		}
		if prev, ok := byCSV[e.Bundle.CSVName]; ok {
			return fmt.Errorf("%s and %s: both bundles have the CSV name %s: an OLM catalog holds one bundle per CSV name; delist one of them or fix its CSV metadata.name", prev, e.Source, e.Bundle.CSVName)
		}
		byCSV[e.Bundle.CSVName] = e.Source
		if _, err := semver.ParseTolerant(e.Bundle.Version); err != nil {
			return fmt.Errorf("%s: bundle %s: CSV spec.version %q is not a semantic version", e.Source, e.Bundle.CSVName, e.Bundle.Version)
		}
		b, err := BundleEntry(p.Name, e)
		if err != nil {
			return fmt.Errorf("%s: %w", e.Source, err)
		}
		vr, err := b.VersionRelease()
		if err != nil {
			return fmt.Errorf("%s: bundle %s: %w", e.Source, e.Bundle.CSVName, err)
		}
		cfg.Bundles = append(cfg.Bundles, b)
		vs = append(vs, versioned{name: e.Bundle.CSVName, version: vr, source: e.Source, b: e.Bundle, delisted: !e.DelistedSince.IsZero()})
	}
	if err := sortVersions(vs); err != nil {
		return err
	}

	chans, def, err := packageChannels(p, vs, cfg.Bundles[first:])
	if err != nil {
		return fmt.Errorf("package %s: %w", p.Name, err)
	}
	cfg.Channels = append(cfg.Channels, chans...)
	// The newest listed version decides the icon and description (and the
	// default channel, without Semver), as it does on the Alauda side.
	newest := newestListed(vs).b
	pkg := declcfg.Package{Schema: declcfg.SchemaPackage, Name: p.Name, DefaultChannel: def, Description: newest.CSV.Spec.Description}
	if len(newest.CSV.Spec.Icon) > 0 && newest.CSV.Spec.Icon[0].Data != "" {
		icon := newest.CSV.Spec.Icon[0]
		data, err := iconBytes(icon.Data)
		if err != nil {
			return fmt.Errorf("package %s: CSV %s: spec.icon[0].base64data is not base64: %v", p.Name, newest.CSV.Name, err)
		}
		// declcfg.Icon.Data holds the image bytes (its JSON is their
		// base64): the CSV's base64data decoded, not its text.
		pkg.Icon = &declcfg.Icon{Data: data, MediaType: icon.MediaType}
	}
	cfg.Packages = append(cfg.Packages, pkg)
	return nil
}

// BundleEntry returns the olm.bundle of e in package pkg, as `opm render`
// of the bundle image would without a migration (one olm.bundle.object
// per manifest; see the package documentation), with e.Image as its image
// and CsvJSON set to the CSV, as the csv.metadata migration needs it. An
// entry of a previous catalog (Previous.Entry) is returned as it was, in
// the format it was published in; that of a condensed bundle (Condense)
// as Condense made it, in FormatCSVMetadata, with e.Image.
func BundleEntry(pkg string, e Entry) (declcfg.Bundle, error) {
	if e.prebuilt != nil {
		out := *e.prebuilt
		// The migration rewrites Properties in place: not the previous
		// catalog's.
		out.Properties = append([]property.Property(nil), out.Properties...)
		out.Package, out.Image = pkg, e.Image
		return out, nil
	}
	if c, ok := condensedOf(e.Bundle); ok {
		return condensedEntry(pkg, e, c)
	}
	b := e.Bundle
	fail := func(err error) (declcfg.Bundle, error) {
		return declcfg.Bundle{}, fmt.Errorf("bundle %s: %w", b.CSVName, err)
	}
	if b.Loaded == nil || b.CSV == nil {
		return fail(errors.New("no ClusterServiceVersion"))
	}
	if b.Version == "" {
		return fail(errors.New("CSV spec.version is empty: OLM needs a version"))
	}
	fileProps, deps, err := metadataProperties(b.Metadata)
	if err != nil {
		return fail(err)
	}

	provided, pkgProp, others, err := bundleProperties(pkg, b, fileProps)
	if err != nil {
		return fail(err)
	}
	required, pkgRequired, depOthers, err := dependencyProperties(deps)
	if err != nil {
		return fail(err)
	}
	others = append(others, depOthers...)
	if err := apiGVKs(b, provided, required); err != nil {
		return fail(err)
	}

	props := []property.Property{pkgProp}
	for g := range provided {
		props = append(props, property.MustBuildGVK(g.Group, g.Version, g.Kind))
	}
	for g := range required {
		props = append(props, property.MustBuildGVKRequired(g.Group, g.Version, g.Kind))
	}
	props = append(props, pkgRequired...)
	props = append(props, others...)
	objProps, csvJSON, err := objectProperties(b)
	if err != nil {
		return fail(err)
	}
	props = append(props, objProps...)
	head, objs := orderProperties(props)
	return declcfg.Bundle{
		Schema:        declcfg.SchemaBundle,
		Name:          b.CSVName,
		Package:       pkg,
		Image:         e.Image,
		Properties:    append(head, objs...),
		RelatedImages: relatedImages(b, e.Image),
		CsvJSON:       csvJSON,
	}, nil
}

// bundleProperties collects the properties of bundle b in package pkg as
// opm's bundle parser does (pkg/registry/parse.go): fileProps (of
// metadata/properties.yaml), then the package of metadata/annotations.yaml,
// then the CSV's olm.properties annotation, each once; the last olm.package
// wins. The package of annotations.yaml carries the CSV's spec.release
// (opm v1.62 and later). It returns the GVKs the properties provide, the olm.package
// property and the other properties in order. The error names the property
// whose value is not the JSON of its type.
func bundleProperties(pkg string, b *bundle.Bundle, fileProps []property.Property) (provided map[property.GVK]bool, pkgProp property.Property, others []property.Property, err error) {
	provided = map[property.GVK]bool{}
	var csvProps []property.Property
	if a := b.CSV.Annotations["olm.properties"]; a != "" {
		if json.Unmarshal([]byte(a), &csvProps) != nil {
			csvProps = nil // opm only warns
		}
	}
	all := append(append(append([]property.Property(nil), fileProps...), property.MustBuildPackageRelease(pkg, b.Version, b.Release)), csvProps...)
	seen := map[string]bool{}
	for i, p := range all {
		if seen[p.String()] {
			continue
		}
		seen[p.String()] = true
		switch p.Type {
		case property.TypeGVK:
			var v property.GVK
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return nil, property.Property{}, nil, fmt.Errorf("property %d (%s): %v", i, p.Type, err)
			}
			provided[v] = true
		case property.TypePackage:
			var v property.Package
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return nil, property.Property{}, nil, fmt.Errorf("property %d (%s): %v", i, p.Type, err)
			}
			pkgProp = property.MustBuildPackageRelease(v.PackageName, v.Version, v.Release)
		default:
			others = append(others, p)
		}
	}
	return provided, pkgProp, others, nil
}

// dependencyProperties turns the entries of metadata/dependencies.yaml
// (deps) into the GVKs they require, olm.package.required properties and,
// for other types, the entries unchanged, in order. The error names the
// entry whose value is not the JSON of its type.
func dependencyProperties(deps []property.Property) (required map[property.GVK]bool, pkgRequired, others []property.Property, err error) {
	required = map[property.GVK]bool{}
	for i, d := range deps {
		switch d.Type {
		case property.TypeGVK:
			var v property.GVK
			if err := json.Unmarshal(d.Value, &v); err != nil {
				return nil, nil, nil, fmt.Errorf("metadata dependencies entry %d (%s): %v", i, d.Type, err)
			}
			required[v] = true
		case property.TypePackage:
			var v property.Package
			if err := json.Unmarshal(d.Value, &v); err != nil {
				return nil, nil, nil, fmt.Errorf("metadata dependencies entry %d (%s): %v", i, d.Type, err)
			}
			pkgRequired = append(pkgRequired, property.MustBuildPackageRequired(v.PackageName, v.Version))
		default:
			others = append(others, d)
		}
	}
	return required, pkgRequired, others, nil
}

// apiGVKs adds to provided the GVKs of bundle b's CRDs (v1 and v1beta1) and
// owned API services, and to required those of the CSV's required CRDs and
// API services. The error names a required CRD whose name is not
// <plural>.<group>.
func apiGVKs(b *bundle.Bundle, provided, required map[property.GVK]bool) error {
	type gvk = property.GVK
	for _, crd := range b.Loaded.V1CRDs {
		for _, v := range crd.Spec.Versions {
			provided[gvk{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = true
		}
	}
	for _, crd := range b.Loaded.V1beta1CRDs {
		for _, v := range crd.Spec.Versions {
			provided[gvk{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = true
		}
		if crd.Spec.Version != "" {
			provided[gvk{Group: crd.Spec.Group, Version: crd.Spec.Version, Kind: crd.Spec.Names.Kind}] = true
		}
	}
	for _, a := range b.CSV.Spec.APIServiceDefinitions.Owned {
		provided[gvk{Group: a.Group, Version: a.Version, Kind: a.Kind}] = true
	}
	for _, c := range b.CSV.Spec.CustomResourceDefinitions.Required {
		plural, group, ok := strings.Cut(c.Name, ".")
		if !ok || plural == "" {
			return fmt.Errorf("required CRD %q: name is not <plural>.<group>", c.Name)
		}
		required[gvk{Group: group, Version: c.Version, Kind: c.Kind}] = true
	}
	for _, a := range b.CSV.Spec.APIServiceDefinitions.Required {
		required[gvk{Group: a.Group, Version: a.Version, Kind: a.Kind}] = true
	}
	return nil
}

// objectProperties returns one olm.bundle.object property per manifest
// object of bundle b, in order, and the JSON of the CSV among them (""
// when there is none). The error names the object that does not marshal.
func objectProperties(b *bundle.Bundle) (props []property.Property, csvJSON string, err error) {
	for i, obj := range b.Loaded.Objects {
		data, err := json.Marshal(obj)
		if err != nil {
			return nil, "", fmt.Errorf("manifest object %d: %v", i, err)
		}
		if obj.GetKind() == "ClusterServiceVersion" {
			csvJSON = string(data)
		}
		props = append(props, property.MustBuildBundleObject(data))
	}
	return props, csvJSON, nil
}

// orderProperties sorts props (in place) by type, then value, and splits
// them as opm render writes them (alpha/action/render.go): head holds all
// but the bundle objects and CSV metadata, objs those, which go last.
func orderProperties(props []property.Property) (head, objs []property.Property) {
	sort.SliceStable(props, func(i, j int) bool {
		if props[i].Type != props[j].Type {
			return props[i].Type < props[j].Type
		}
		return string(props[i].Value) < string(props[j].Value)
	})
	for _, p := range props {
		if p.Type == property.TypeBundleObject || p.Type == property.TypeCSVMetadata {
			objs = append(objs, p)
		} else {
			head = append(head, p)
		}
	}
	return head, objs
}

// relatedImages lists the CSV's spec.relatedImages, then the bundle image,
// then the images of the install-strategy deployments' containers and
// initContainers, each once (opm's getRelatedImages), sorted by image as
// opm render writes them.
func relatedImages(b *bundle.Bundle, image string) []declcfg.RelatedImage {
	var out []declcfg.RelatedImage
	seen := map[string]bool{}
	for _, ri := range b.CSV.Spec.RelatedImages {
		out = append(out, declcfg.RelatedImage{Name: ri.Name, Image: ri.Image})
		seen[ri.Image] = true
	}
	if image != "" && !seen[image] {
		out = append(out, declcfg.RelatedImage{Image: image})
		seen[image] = true
	}
	var deployed []string
	if b.CSV.Spec.InstallStrategy.StrategyName == "deployment" {
		for _, d := range b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
			for _, c := range append(append([]corev1.Container(nil), d.Spec.Template.Spec.Containers...), d.Spec.Template.Spec.InitContainers...) {
				if !seen[c.Image] {
					seen[c.Image] = true
					deployed = append(deployed, c.Image)
				}
			}
		}
	}
	for _, img := range deployed {
		out = append(out, declcfg.RelatedImage{Image: img})
	}
	// opm render sorts them by image (alpha/action/render.go); ties by name.
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Image != out[j].Image {
			return out[i].Image < out[j].Image
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// metadataProperties reads the properties and dependencies files of a
// bundle's metadata/ directory the way opm does (pkg/registry/parse.go):
// the first file, in name order, with a non-empty properties list, and the
// first with a non-empty dependencies list.
func metadataProperties(files map[string][]byte) (props, deps []property.Property, err error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var f struct {
			Properties   []property.Property `json:"properties"`
			Dependencies []property.Property `json:"dependencies"`
		}
		data, err := yaml.YAMLToJSON(files[n])
		if err != nil || json.Unmarshal(data, &f) != nil {
			continue // not a properties or dependencies file
		}
		if props == nil && len(f.Properties) > 0 {
			props = f.Properties
		}
		if deps == nil && len(f.Dependencies) > 0 {
			deps = f.Dependencies
		}
	}
	for _, list := range [][]property.Property{props, deps} {
		for i, p := range list {
			if p.Type == "" || len(bytes.TrimSpace(p.Value)) == 0 {
				return nil, nil, fmt.Errorf("metadata/: a property or dependency needs a type and a value")
			}
			if list[i].Value, err = unescapedJSON(p.Value); err != nil {
				return nil, nil, fmt.Errorf("metadata/: property %s: %v", p.Type, err)
			}
		}
	}
	return props, deps, nil
}

// unescapedJSON re-encodes a JSON value without HTML escaping (">" stays
// ">", not "\u003e"), as opm writes values read from YAML.
func unescapedJSON(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// iconBytes decodes a CSV icon's base64data (standard base64, padded or
// not; line breaks and spaces, as in a folded YAML scalar, are ignored).
func iconBytes(text string) ([]byte, error) {
	text = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return -1
		}
		return r
	}, text)
	if b, err := base64.StdEncoding.DecodeString(text); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(text, "="))
}
