package prune

import (
	"fmt"
	"strings"
)

// Markdown renders the plan for review (a pull request body, a job
// summary): what would be deleted, by repository, and what is left.
func (p *Plan) Markdown() string {
	var b strings.Builder
	b.WriteString("## publish prune plan\n\n")
	var bytes int64
	for _, e := range p.Entries {
		bytes += e.Size
	}
	sizes := size(bytes) + " of manifests"
	if bytes <= 0 {
		sizes = "sizes with --lookup"
	}
	fmt.Fprintf(&b, "Catalog commit `%s`, made %s: **%d manifests to delete** (%s; their layers go with the registry's garbage collection), %d delisted less than %s ago kept for now, %d of delisted versions still used by a listed version",
		short(p.Catalog), p.Made.Format("2006-01-02 15:04 MST"), len(p.Entries), sizes, len(p.Recent), p.OlderThan, p.Kept)
	if p.Deprecated > 0 {
		fmt.Fprintf(&b, ", %d of delisted versions an OLM catalog still keeps deprecated (they are planned once the deprecation period ends and a publish run takes them out of the catalog)", p.Deprecated)
	}
	if len(p.Gone) > 0 {
		fmt.Fprintf(&b, ", %d already gone at the destination", len(p.Gone))
	}
	b.WriteString(".\n\n")
	if p.Truncated {
		b.WriteString("The catalog history is cut (a shallow clone): a delisting older than its first commit counts from there.\n\n")
	}
	table(&b, p.Entries)
	if len(p.Recent) > 0 {
		fmt.Fprintf(&b, "Delisted less than %s ago, kept for now:\n\n", p.OlderThan)
		table(&b, p.Recent)
	}
	return b.String()
}

// table writes es as a Markdown table ("" for none).
func table(b *strings.Builder, es []Entry) {
	if len(es) == 0 {
		return
	}
	b.WriteString("| repository | digest | tags | size | delisted since | by commit | versions |\n|---|---|---|---|---|---|---|\n")
	for _, e := range es {
		fmt.Fprintf(b, "| `%s` | `%s` | %s | %s | %s | `%s` | %s |\n", e.Repository, shortDigest(e.Digest), strings.Join(e.Tags, ", "), size(e.Size),
			e.DelistedSince.Format("2006-01-02"), short(e.Commit), strings.Join(e.Versions, "; "))
	}
	b.WriteString("\n")
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func shortDigest(d string) string {
	if i := strings.Index(d, ":"); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}

// size prints n bytes for people ("-" for unknown).
func size(n int64) string {
	switch {
	case n <= 0:
		return "-"
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}
