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
	fmt.Fprintf(&b, "Catalog commit `%s`, made %s: **%d manifests to delete** (%s of manifests; their layers go with the registry's garbage collection), %d delisted less than %s ago kept for now, %d still used by a listed version.\n\n",
		short(p.Catalog), p.Made.Format("2006-01-02 15:04 MST"), len(p.Entries), size(bytes), len(p.Recent), p.OlderThan, p.Kept)
	if p.Truncated {
		b.WriteString("The catalog history is cut (a shallow clone): a delisting older than its first commit counts from there.\n\n")
	}
	if len(p.Entries) > 0 {
		b.WriteString("| repository | digest | tags | size | delisted since | by commit | versions |\n|---|---|---|---|---|---|---|\n")
		for _, e := range p.Entries {
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s | `%s` | %s |\n", e.Repository, shortDigest(e.Digest), strings.Join(e.Tags, ", "), size(e.Size),
				e.DelistedSince.Format("2006-01-02"), short(e.Commit), strings.Join(e.Versions, "; "))
		}
		b.WriteString("\n")
	}
	return b.String()
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
