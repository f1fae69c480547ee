package olm

import (
	"sort"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// packageChannels returns the channels of package p and its default
// channel: vs are its bundles in version order (sortVersions), bundles
// their olm.bundle entries. With p.Semver, they are what opm's semver
// template generates (semverChannels); else one channel per channel the
// bundles name (metadata/annotations.yaml; "stable" when none), its
// entries by channelEntries, and the default channel of the newest listed
// bundle, or its first channel when the package has no such channel.
func packageChannels(p Package, vs []versioned, bundles []declcfg.Bundle) ([]declcfg.Channel, string, error) {
	if p.Semver != nil {
		chs := map[string][]string{}
		for _, v := range vs {
			chs[v.name] = v.b.Channels
		}
		out, def, err := semverChannels(bundles, chs, *p.Semver)
		if err != nil {
			return nil, "", err
		}
		for i := range out {
			out[i].Entries = sortEntries(out[i].Entries)
		}
		return out, def, nil
	}
	byChannel := map[string][]versioned{}
	for _, v := range vs {
		chs := v.b.Channels
		if len(chs) == 0 {
			chs = []string{"stable"}
		}
		for _, ch := range chs {
			byChannel[ch] = append(byChannel[ch], v)
		}
	}
	names := make([]string, 0, len(byChannel))
	for ch := range byChannel {
		names = append(names, ch)
	}
	sort.Strings(names)
	var out []declcfg.Channel
	for _, ch := range names {
		out = append(out, declcfg.Channel{
			Schema: declcfg.SchemaChannel, Name: ch, Package: p.Name, Entries: channelEntries(byChannel[ch]),
		})
	}

	// The newest listed version decides the default channel, as it does
	// on the Alauda side.
	newest := newestListed(vs).b
	def := newest.DefaultChannel
	if _, ok := byChannel[def]; !ok {
		def = ""
		chs := newest.Channels
		if len(chs) == 0 {
			chs = []string{"stable"}
		}
		def = chs[0]
	}
	return out, def, nil
}

// channelEntries returns the entries of one channel, vs sorted by version.
// The CSVs' own upgrade graph (spec.replaces, spec.skips, the
// olm.skipRange annotation) is kept when it forms a valid channel with the
// versions published (one head, every bundle reachable from it by
// replaces or skipped); otherwise, typically after a delisting or when only
// some versions are published, each bundle replaces the previous published
// version and keeps its skipRange and the skips of versions not published
// in the channel, so that the channel stays valid and upgrades follow the
// version order.
func channelEntries(vs []versioned) []declcfg.ChannelEntry {
	in := map[string]bool{}
	for _, v := range vs {
		in[v.name] = true
	}
	own := make([]declcfg.ChannelEntry, len(vs))
	for i, v := range vs {
		own[i] = declcfg.ChannelEntry{
			Name:      v.name,
			Replaces:  v.b.CSV.Spec.Replaces,
			Skips:     append([]string(nil), v.b.CSV.Spec.Skips...),
			SkipRange: v.b.CSV.Annotations["olm.skipRange"],
		}
	}
	if validChannel(own) {
		return sortEntries(own)
	}
	chain := make([]declcfg.ChannelEntry, len(vs))
	for i, e := range own {
		chain[i] = e
		if i > 0 {
			chain[i].Replaces = vs[i-1].name
		} else if in[e.Replaces] {
			chain[i].Replaces = ""
		}
		// A skip of a version published in the channel would cut the
		// chain there (operator-registry stops following replaces at a
		// skipped bundle, stranding the older ones); replaces reaches it
		// anyway.
		var skips []string
		for _, s := range e.Skips {
			if !in[s] {
				skips = append(skips, s)
			}
		}
		chain[i].Skips = skips
	}
	return sortEntries(chain)
}

func sortEntries(es []declcfg.ChannelEntry) []declcfg.ChannelEntry {
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	return es
}

// validChannel applies the rules of operator-registry's
// model.Channel.validateReplacesChain: exactly one head (no incoming
// replaces or skips), no cycle, and every bundle on the replaces chain from
// the head or skipped by some bundle.
func validChannel(es []declcfg.ChannelEntry) bool {
	byName := map[string]declcfg.ChannelEntry{}
	incoming := map[string]bool{}
	skipped := map[string]bool{}
	for _, e := range es {
		byName[e.Name] = e
		if e.Replaces != "" {
			incoming[e.Replaces] = true
		}
		for _, s := range e.Skips {
			incoming[s], skipped[s] = true, true
		}
	}
	var heads []string
	for _, e := range es {
		if !incoming[e.Name] {
			heads = append(heads, e.Name)
		}
	}
	if len(heads) != 1 {
		return false
	}
	reached := map[string]bool{heads[0]: true}
	for cur, ok := byName[heads[0]]; ok; cur, ok = byName[cur.Replaces] {
		if skipped[cur.Replaces] {
			break
		}
		if reached[cur.Replaces] {
			return false // cycle
		}
		reached[cur.Replaces] = true
	}
	for _, e := range es {
		if !reached[e.Name] && !skipped[e.Name] {
			return false
		}
	}
	return true
}
