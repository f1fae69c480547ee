package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
)

// GraphBundle is what the upgrade graph needs of one bundle of a package:
// the facts of its CSV (metadata.name, spec.version, spec.replaces,
// spec.skips, the olm.skipRange annotation) and its channels
// (metadata/annotations.yaml; none: "stable", as the OLM target does).
type GraphBundle struct {
	Version   string
	CSVName   string
	Replaces  string
	Skips     []string
	SkipRange string
	Channels  []string
}

// Edge kinds of a PlanGraph: the CSV field an upgrade edge comes from.
const (
	EdgeReplaces  = "replaces"
	EdgeSkips     = "skips"
	EdgeSkipRange = "skipRange"
)

// GraphEdge is one upgrade edge: From (the newer version) upgrades from To
// by Kind.
type GraphEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Kind string `json:"kind"`
}

// GraphSide is one channel's graph at one time (before or after the plan):
// the versions listed in it, ascending, its head (the newest version no
// other upgrades from; "" when empty) and its edges.
type GraphSide struct {
	Versions []string    `json:"versions"`
	Head     string      `json:"head,omitempty"`
	Edges    []GraphEdge `json:"edges"`
}

// GraphChannel is one channel of a PlanGraph before and after.
type GraphChannel struct {
	Name   string    `json:"name"`
	Before GraphSide `json:"before"`
	After  GraphSide `json:"after"`
}

// PlanGraph is the upgrade graph of one changed package before and after
// the plan, by channel (sorted by name). Versions whose bundle was not
// read (gone from the package repo) are in channel "-", without edges of
// their own.
type PlanGraph struct {
	Package  string         `json:"package"`
	Channels []GraphChannel `json:"channels"`
}

// NewPlanGraph builds the graph of package pkg from the versions listed
// before and after (semver strings) and the bundles by version (those of
// the versions in either list that were read). An edge is drawn on a side
// only between versions listed on that side: replaces and skips name CSVs
// (metadata.name), a skipRange (a semver range) reaches every listed
// version of the channel within it.
func NewPlanGraph(pkg string, before, after []string, bundles map[string]GraphBundle) PlanGraph {
	chans := map[string]map[string]bool{} // channel -> versions of it
	channelsOf := func(v string) []string {
		b, ok := bundles[v]
		switch {
		case !ok:
			return []string{"-"}
		case len(b.Channels) == 0:
			return []string{"stable"}
		}
		return b.Channels
	}
	for _, v := range append(append([]string(nil), before...), after...) {
		for _, c := range channelsOf(v) {
			if chans[c] == nil {
				chans[c] = map[string]bool{}
			}
			chans[c][v] = true
		}
	}
	g := PlanGraph{Package: pkg, Channels: []GraphChannel{}}
	for _, c := range sortedNames(chans) {
		g.Channels = append(g.Channels, GraphChannel{Name: c, Before: side(before, chans[c], bundles), After: side(after, chans[c], bundles)})
	}
	return g
}

// side is the GraphSide of the versions of listed that are in channel in.
func side(listed []string, in map[string]bool, bundles map[string]GraphBundle) GraphSide {
	s := GraphSide{Versions: []string{}, Edges: []GraphEdge{}}
	byCSV := map[string]string{}
	for _, v := range listed {
		if in[v] {
			s.Versions = append(s.Versions, v)
			if b, ok := bundles[v]; ok {
				byCSV[b.CSVName] = v
			}
		}
	}
	sort.Slice(s.Versions, func(i, j int) bool { return lessVersion(s.Versions[i], s.Versions[j]) })
	incoming := map[string]bool{}
	add := func(from, to, kind string) {
		for _, e := range s.Edges {
			if e.From == from && e.To == to {
				return // one edge per pair: replaces wins over skips, skips over skipRange
			}
		}
		s.Edges = append(s.Edges, GraphEdge{From: from, To: to, Kind: kind})
		incoming[to] = true
	}
	for _, v := range s.Versions {
		b, ok := bundles[v]
		if !ok {
			continue
		}
		if to, ok := byCSV[b.Replaces]; ok && b.Replaces != "" && to != v {
			add(v, to, EdgeReplaces)
		}
		for _, sk := range b.Skips {
			if to, ok := byCSV[sk]; ok && to != v {
				add(v, to, EdgeSkips)
			}
		}
		if r, err := semver.ParseRange(b.SkipRange); err == nil && b.SkipRange != "" {
			for _, w := range s.Versions {
				if pv, err := semver.ParseTolerant(w); err == nil && w != v && r(pv) {
					add(v, w, EdgeSkipRange)
				}
			}
		}
	}
	for i := len(s.Versions) - 1; i >= 0; i-- {
		if !incoming[s.Versions[i]] {
			s.Head = s.Versions[i]
			break
		}
	}
	return s
}

func sortedNames[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Mermaid draws g as a Mermaid flowchart (GitHub and GitLab render a
// ```mermaid block): a "before" and an "after" subgraph, each with one
// subgraph per channel; a node per listed version, the head marked
// "(head)", a version new in the channel in bold with "(new)", a version
// listed before and not after struck out (<del>) in "after" with
// "(delisted)"; an edge per upgrade, newer to older, labelled with its
// kind (replaces solid, skips and skipRange dotted). Node ids are
// b<channel>v<i> and a<channel>v<i>, so that a drawn edge's id
// (L_<from>_<to>_<n>) names its ends; NodeVersion maps them back.
func (g PlanGraph) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart RL\n")
	b.WriteString("  classDef delisted stroke-dasharray: 4 3,color:#888\n  classDef added stroke-width:3px\n")
	for _, when := range []string{"before", "after"} {
		fmt.Fprintf(&b, "  subgraph %s[\"%s\"]\n    direction RL\n", when, when)
		for ci, c := range g.Channels {
			s, other := c.Before, c.After
			if when == "after" {
				s, other = c.After, c.Before
			}
			fmt.Fprintf(&b, "    subgraph %s%d[\"channel %s\"]\n", when[:1], ci, mermaidText(c.Name))
			if len(s.Versions) == 0 && (when == "before" || len(other.Versions) == 0) {
				fmt.Fprintf(&b, "      %s%dnone[\"none listed\"]\n", when[:1], ci)
			}
			in := map[string]bool{}
			for _, v := range other.Versions {
				in[v] = true
			}
			mine := map[string]bool{}
			for i, v := range s.Versions {
				mine[v] = true
				label, class := mermaidText(v), ""
				switch {
				case when == "after" && !in[v] && v == s.Head:
					label, class = "<b>"+label+"</b> (new head)", "added"
				case when == "after" && !in[v]:
					label, class = "<b>"+label+"</b> (new)", "added"
				case v == s.Head:
					label += " (head)"
				}
				fmt.Fprintf(&b, "      %s[\"%s\"]\n", NodeID(when, ci, i), label)
				if class != "" {
					fmt.Fprintf(&b, "      class %s %s\n", NodeID(when, ci, i), class)
				}
			}
			if when == "after" {
				for i, v := range other.Versions {
					if !mine[v] {
						id := NodeID("gone", ci, i)
						fmt.Fprintf(&b, "      %s[\"<del>%s</del> (delisted)\"]\n      class %s delisted\n", id, mermaidText(v), id)
					}
				}
			}
			b.WriteString("    end\n")
			idx := map[string]int{}
			for i, v := range s.Versions {
				idx[v] = i
			}
			for _, e := range s.Edges {
				arrow := " -. " + e.Kind + " .-> "
				if e.Kind == EdgeReplaces {
					arrow = " -- replaces --> "
				}
				fmt.Fprintf(&b, "    %s%s%s\n", NodeID(when, ci, idx[e.From]), arrow, NodeID(when, ci, idx[e.To]))
			}
		}
		b.WriteString("  end\n")
	}
	return b.String()
}

// NodeID is the Mermaid node id of version i of channel ci on side when
// (before, after, or gone: a version delisted, drawn in after).
func NodeID(when string, ci, i int) string {
	return fmt.Sprintf("%s%dv%d", when[:1], ci, i)
}

// mermaidText escapes a version or channel name for a quoted Mermaid
// label.
func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;").Replace(s)
}

// markdownGraphs writes the upgrade graph of every changed package, one
// ```mermaid block each, under a heading; nothing when there is none.
func (p *Plan) markdownGraphs(b *strings.Builder) {
	if len(p.Graphs) == 0 {
		return
	}
	b.WriteString("### Upgrade graphs\n\n")
	for _, g := range p.Graphs {
		fmt.Fprintf(b, "`%s`: before and after this change (dotted: skips and skipRange; struck out: delisted)\n\n```mermaid\n%s```\n\n", g.Package, g.Mermaid())
	}
}

// ClusterTable is the Markdown table of what the plans (one per cluster)
// leave listed, cluster by cluster: a row per artifact a plan changes or
// holds back, a column per plan's cluster, each cell the newest version
// listed after the plan (with how many older ones stay listed) and the
// versions its gates hold back, "waiting until <time>" (UTC) or "waiting
// for <cluster>"; "unchanged" where a plan does not touch the artifact,
// "none" where it lists no version. "" when no plan changes or holds back
// anything.
func ClusterTable(plans []*Plan) string {
	arts := map[string]bool{}
	for _, p := range plans {
		for a := range p.Listed {
			arts[a] = true
		}
		for _, w := range p.Waiting {
			arts[w.Artifact] = true
		}
	}
	if len(arts) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("### Listed by cluster\n\n| artifact |")
	for _, p := range plans {
		fmt.Fprintf(&b, " %s |", p.Cluster)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(plans)) + "\n")
	for _, a := range sortedNames(arts) {
		fmt.Fprintf(&b, "| `%s` |", a)
		for _, p := range plans {
			fmt.Fprintf(&b, " %s |", p.clusterCell(a))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	return b.String()
}

// clusterCell is the ClusterTable cell of artifact a in p.
func (p *Plan) clusterCell(a string) string {
	vs, touched := p.Listed[a]
	var parts []string
	switch {
	case len(vs) > 0:
		s := vs[len(vs)-1]
		if len(vs) > 1 {
			s += fmt.Sprintf(" (+%d older)", len(vs)-1)
		}
		parts = append(parts, s)
	case touched:
		parts = append(parts, "none")
	}
	for _, w := range p.Waiting {
		if w.Artifact != a {
			continue
		}
		if w.Until.IsZero() {
			parts = append(parts, fmt.Sprintf("%s waiting for %s", w.Version, w.Upstream))
		} else {
			parts = append(parts, fmt.Sprintf("%s waiting until %s", w.Version, w.Until.UTC().Format("2006-01-02T15:04Z")))
		}
	}
	if len(parts) == 0 {
		return "unchanged"
	}
	return strings.Join(parts, "; ")
}
