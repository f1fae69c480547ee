package olm

import (
	"fmt"
	"sort"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// deprecations returns the olm.deprecations blobs of pkgs (sorted by
// name), one per package that deprecates anything, in the schema of
// operator-registry's declcfg.Deprecation (alpha/declcfg/declcfg.go; the
// file-based catalog reference, "olm.deprecations"): at most one blob per
// package, each reference once.
//
//   - Package.Deprecated is an entry with reference {schema: olm.package}
//     (no name, as declcfg.ConvertToModel requires).
//   - Entry.Deprecated is an entry with reference {schema: olm.bundle,
//     name: the bundle's CSV name}.
//   - A channel of channels (the built olm.channel blobs) whose every
//     bundle is delisted (Entry.DelistedSince set), in a package that is
//     not deprecated whole, is
//     an entry with reference {schema: olm.channel, name: the channel}: no
//     listed version remains in it. Its message names the channel, and the
//     default channel to move to.
//
// Entries are ordered package, channels by name, bundles by name, so that
// the same input gives the same bytes.
func deprecations(pkgs []Package, channels []declcfg.Channel) []declcfg.Deprecation {
	var out []declcfg.Deprecation
	for _, p := range pkgs {
		if len(p.Entries) == 0 {
			continue
		}
		d := declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: p.Name}
		if p.Deprecated != "" {
			d.Entries = append(d.Entries, declcfg.DeprecationEntry{
				Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaPackage}, Message: p.Deprecated,
			})
		}
		delisted := map[string]bool{}
		var bundles []declcfg.DeprecationEntry
		for _, e := range p.Entries {
			if e.Deprecated == "" || e.Bundle == nil {
				continue
			}
			delisted[e.Bundle.CSVName] = !e.DelistedSince.IsZero()
			bundles = append(bundles, declcfg.DeprecationEntry{
				Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: e.Bundle.CSVName}, Message: e.Deprecated,
			})
		}
		if p.Deprecated == "" && len(delisted) > 0 {
			d.Entries = append(d.Entries, channelDeprecations(p.Name, channels, delisted)...)
		}
		sort.Slice(bundles, func(i, j int) bool { return bundles[i].Reference.Name < bundles[j].Reference.Name })
		d.Entries = append(d.Entries, bundles...)
		if len(d.Entries) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// channelDeprecations returns the olm.channel deprecation entries of
// package pkg: one per channel of channels (sorted by name, as Build
// makes them) whose every bundle is delisted (true in delisted, by CSV
// name), naming a channel that still has a listed bundle to switch to,
// when there is one.
func channelDeprecations(pkg string, channels []declcfg.Channel, delisted map[string]bool) []declcfg.DeprecationEntry {
	var gone, kept []string
	for _, ch := range channels {
		if ch.Package != pkg {
			continue
		}
		all := len(ch.Entries) > 0
		for _, e := range ch.Entries {
			all = all && delisted[e.Name]
		}
		if all {
			gone = append(gone, ch.Name)
		} else {
			kept = append(kept, ch.Name)
		}
	}
	var out []declcfg.DeprecationEntry
	for _, ch := range gone {
		msg := fmt.Sprintf("channel %s of %s has no published version left: its bundles leave this catalog at the end of their deprecation period", ch, pkg)
		if len(kept) > 0 {
			msg += fmt.Sprintf("; subscribe to channel %s instead", kept[0])
		}
		out = append(out, declcfg.DeprecationEntry{
			Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaChannel, Name: ch}, Message: msg,
		})
	}
	return out
}

// newestListed returns the newest of vs (sorted by version) that is not
// delisted, or the newest of all when every one is: the version whose
// metadata the olm.package takes.
func newestListed(vs []versioned) versioned {
	for i := len(vs) - 1; i >= 0; i-- {
		if !vs[i].delisted {
			return vs[i]
		}
	}
	return vs[len(vs)-1]
}
