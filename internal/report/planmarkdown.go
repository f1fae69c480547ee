package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/lint"
)

// MaxDiffLines is where the Markdown plan stops showing the diff inline:
// longer diffs are cut there, with a note pointing to the plan JSON.
const MaxDiffLines = 400

// Markdown renders the plan for a PR comment or job summary: a headline
// of the counts in p.Summary (Summarise first) and the images, a table of
// the artifacts, the source's warnings, the lint findings, the signature
// status of the verified images, and the rendered files with their diff
// (collapsed past 60 lines, cut at MaxDiffLines). The JSON form of the
// same plan is documented in docs/plan-json.md.
func (p *Plan) Markdown() string {
	var b strings.Builder
	s := p.Summary
	b.WriteString("## publish plan\n\n")
	if s.Listed+s.Upgraded+s.Delisted+s.Relisted == 0 && len(p.Artifacts) == 0 {
		b.WriteString("No listing changes.\n\n")
	} else {
		fmt.Fprintf(&b, "**%d listed, %d upgraded, %d delisted, %d relisted**; %s.\n\n",
			s.Listed, s.Upgraded, s.Delisted, s.Relisted, p.imagesHeadline())
		column, cell := "images (missing at destination)", "%d (%d)"
		if s.ImagesUnknown > 0 {
			column, cell = "images (missing, unknown at destination)", "%d (%d, %d)"
		}
		fmt.Fprintf(&b, "| artifact | action | versions | %s |\n|---|---|---|---|\n", column)
		for _, a := range p.Artifacts {
			var vs []string
			var n PlanSummary
			countImages(&n, a)
			for _, v := range a.Versions {
				vs = append(vs, v.Version+" ("+v.Action+")")
			}
			counts := []any{n.ImagesToCopy, n.ImagesMissing, n.ImagesUnknown}
			if s.ImagesUnknown == 0 {
				counts = counts[:2]
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | "+cell+" |\n", append([]any{a.Name, a.Action, strings.Join(vs, ", ")}, counts...)...)
		}
		b.WriteString("\n")
	}
	b.WriteString(ClusterTable([]*Plan{p}))
	p.markdownWaiting(&b)
	p.markdownGraphs(&b)
	if p.Source.All {
		b.WriteString("> **Note:** no usable base commit; every version was treated as changed.\n\n")
	}
	for _, w := range p.Source.Warnings {
		fmt.Fprintf(&b, "> warning: %s\n\n", w)
	}
	if len(p.Findings) == 0 {
		b.WriteString("### Lint\n\nlint ok\n\n")
	} else {
		fmt.Fprintf(&b, "### Lint: %s, %s\n\n", lint.Count(s.Errors, "error"), lint.Count(s.Warnings, "warning"))
		for _, f := range p.Findings {
			b.WriteString(f.MarkdownLine() + "\n") // a waived one says its reason and what it was
		}
		b.WriteString("\n")
	}
	p.markdownSignatures(&b)
	p.markdownChartImages(&b)
	fmt.Fprintf(&b, "### Rendered files (%s): %d would change\n\n", "rendered/"+p.Cluster, len(p.Files))
	for _, f := range p.Files {
		fmt.Fprintf(&b, "- %s `%s`\n", f.Change, f.Path)
	}
	if p.Diff != "" {
		lines := strings.Count(p.Diff, "\n")
		open := ""
		if lines <= 60 {
			open = " open"
		}
		fmt.Fprintf(&b, "\n<details%s><summary>diff (%d lines)</summary>\n\n```diff\n", open, lines)
		d := p.Diff
		if lines > MaxDiffLines {
			d = strings.Join(strings.SplitN(d, "\n", MaxDiffLines+1)[:MaxDiffLines], "\n") + fmt.Sprintf("\n… %d more lines: see the plan JSON\n", lines-MaxDiffLines)
		}
		b.WriteString(d)
		if !strings.HasSuffix(d, "\n") {
			b.WriteString("\n")
		}
		b.WriteString("```\n\n</details>\n")
	}
	return b.String()
}

// imagesHeadline is the images part of the Markdown headline: how many to
// mirror and how many are missing at the destination, and, when some are
// unknown there, how many and why, with what to do for a refused HEAD.
func (p *Plan) imagesHeadline() string {
	s := p.Summary
	if s.ImagesUnknown == 0 {
		return fmt.Sprintf("%d images to mirror, %d missing at the destination", s.ImagesToCopy, s.ImagesMissing)
	}
	count := map[string]int{}
	var reasons []string
	for _, a := range p.Artifacts {
		for _, v := range a.Versions {
			for _, i := range v.Images {
				if i.AtDestination != "unknown" {
					continue
				}
				r := i.UnknownReason
				if r == "" {
					r = "no reason given"
				}
				if count[r] == 0 {
					reasons = append(reasons, r)
				}
				count[r]++
			}
		}
	}
	sort.SliceStable(reasons, func(i, j int) bool { return count[reasons[i]] > count[reasons[j]] })
	refused := false
	for k, r := range reasons {
		refused = refused || r == ReasonNoReadAccess || r == ReasonDenied
		if len(reasons) > 1 {
			reasons[k] = fmt.Sprintf("%d %s", count[r], r)
		}
	}
	why := strings.Join(reasons, ", ")
	if refused {
		sep := ": "
		if len(reasons) > 1 {
			sep = "; "
		}
		why += sep + "give the plan job read credentials for --dst-registry to know"
	}
	return fmt.Sprintf("%d images to mirror: %d missing, %d unknown at the destination (%s)", s.ImagesToCopy, s.ImagesMissing, s.ImagesUnknown, why)
}

// markdownSignatures writes, for the images the plan verified (nothing
// without a verify policy), each artifact's count of signed, unsigned and
// failed images, then the signature status of every image.
func (p *Plan) markdownSignatures(b *strings.Builder) {
	var rows []string
	seen := map[string]bool{}
	for _, a := range p.Artifacts {
		for _, v := range a.Versions {
			for _, i := range v.Images {
				r := i.Verification
				if r == nil || seen[i.Source] {
					continue
				}
				seen[i.Source] = true
				detail := r.Found
				if r.Failed() {
					detail = "expected " + r.Expected + "; found " + r.Found
				}
				rows = append(rows, fmt.Sprintf("| `%s` | %s | %s | %s |", i.Source, r.Status, strings.TrimSpace(r.Mode+" "+r.Policy), strings.ReplaceAll(detail, "|", "\\|")))
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "### Signatures: %d images\n\n", len(rows))
	counted := false
	for _, a := range p.Artifacts {
		if c := a.Signatures; c != nil {
			fmt.Fprintf(b, "- `%s`: %s\n", a.Name, c)
			counted = true
		}
	}
	if counted {
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "| image | status | policy | signature |\n|---|---|---|---|\n%s\n\n", strings.Join(rows, "\n"))
}

// markdownWaiting writes the versions the cluster's gates hold back: a
// table of artifact, version, the upstream cluster it waits for, when it
// may list (UTC) and why; nothing when none waits.
func (p *Plan) markdownWaiting(b *strings.Builder) {
	if len(p.Waiting) == 0 {
		return
	}
	fmt.Fprintf(b, "### Waiting for gates: %d\n\n| artifact | version | waits for | lists from | why |\n|---|---|---|---|---|\n", len(p.Waiting))
	for _, w := range p.Waiting {
		until := "when listed there"
		if w.Health != "" {
			until = "when recorded healthy there"
		}
		if !w.Until.IsZero() {
			until = w.Until.UTC().Format("2006-01-02T15:04Z")
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", w.Artifact, w.Version, w.Upstream, until, strings.ReplaceAll(w.Reason, "|", `\|`))
	}
	b.WriteString("\n")
}

// markdownChartImages writes the images of the charts the plan changes,
// each with what named it (PlanImage.NamedBy): a table of chart, version,
// image and sources; nothing when no chart changes.
func (p *Plan) markdownChartImages(b *strings.Builder) {
	var rows []string
	for _, a := range p.Artifacts {
		for _, v := range a.Versions {
			for _, i := range v.Images {
				if len(i.NamedBy) == 0 {
					continue
				}
				named := make([]string, len(i.NamedBy))
				for k, n := range i.NamedBy {
					named[k] = n.String()
				}
				rows = append(rows, fmt.Sprintf("| `%s` | %s | `%s` | %s |", a.Name, v.Version, i.Source, strings.ReplaceAll(strings.Join(named, "; "), "|", `\|`)))
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "### Chart images: %d\n\n| chart | version | image | named by |\n|---|---|---|---|\n%s\n\n", len(rows), strings.Join(rows, "\n"))
}
