package status

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Formats of Print.
const (
	FormatText     = "text"
	FormatJSON     = "json"
	FormatMarkdown = "markdown"
)

// Print writes r as text (one line per version, grouped by namespace and
// artifact, then what to do), JSON (the Report's fields) or Markdown (a
// table for a CI job summary such as $GITHUB_STEP_SUMMARY).
func (r *Report) Print(w io.Writer, format string) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case FormatMarkdown:
		r.markdown(w)
		return nil
	case FormatText, "":
		r.text(w)
		return nil
	}
	return fmt.Errorf("unknown format %q (text, json or markdown)", format)
}

func asked(v Version) string {
	if v.Present {
		return "listed"
	}
	return "delisted"
}

func phase(v Version) string {
	if !v.InCluster {
		return "-"
	}
	s := orNone(v.Phase)
	if v.Reason != "" {
		s += "/" + v.Reason
	}
	return s
}

func listed(v Version) string {
	switch {
	case v.Listed == nil:
		return "-"
	case *v.Listed:
		return "yes"
	}
	return "no"
}

func (r *Report) summary() string {
	return fmt.Sprintf("%d as asked, %d waiting, %d failed of %d", r.Count(AsAsked), r.Count(Waiting), r.Count(Failed), len(r.Versions)+len(r.Catalogs))
}

func (r *Report) text(w io.Writer) {
	group := ""
	for _, v := range r.Versions {
		if g := v.Namespace + "/" + v.Artifact; g != group {
			group = g
			fmt.Fprintf(w, "%s (namespace %s)\n", v.Artifact, v.Namespace)
		}
		fmt.Fprintf(w, "  %-9s %-30s asked %-8s phase %-18s in PackageManifest %-3s\n", v.State, v.Name, asked(v), phase(v), listed(v))
		if v.Action != "" {
			fmt.Fprintf(w, "            %s\n", v.Action)
		}
	}
	for _, c := range r.Catalogs {
		fmt.Fprintf(w, "  %-9s %s %s: %s\n", c.State, c.Kind, c.Name, c.Detail)
		if c.Action != "" {
			fmt.Fprintf(w, "            %s\n", c.Action)
		}
	}
	if !r.PackageManifests && len(r.Versions) > 0 {
		fmt.Fprintln(w, "the cluster serves no PackageManifests (packages.operators.coreos.com): the OperatorHub listing was not checked")
	}
	fmt.Fprintf(w, "cluster %s: %s\n", r.Cluster, r.summary())
}

func (r *Report) markdown(w io.Writer) {
	fmt.Fprintf(w, "### Catalog status: cluster %s\n\n%s\n\n", r.Cluster, r.summary())
	if len(r.Versions) > 0 {
		fmt.Fprintln(w, "| state | namespace | artifact | ArtifactVersion | asked | phase | in PackageManifest | what to do |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
		for _, v := range r.Versions {
			fmt.Fprintf(w, "| %s | %s | %s | `%s` | %s | %s | %s | %s |\n", v.State, v.Namespace, v.Artifact, v.Name, asked(v), phase(v), listed(v), cell(v.Action))
		}
	}
	if len(r.Catalogs) > 0 {
		fmt.Fprintln(w, "\n| state | kind | name | detail | what to do |")
		fmt.Fprintln(w, "|---|---|---|---|---|")
		for _, c := range r.Catalogs {
			fmt.Fprintf(w, "| %s | %s | `%s` | %s | %s |\n", c.State, c.Kind, c.Name, cell(c.Detail), cell(c.Action))
		}
	}
	if !r.PackageManifests && len(r.Versions) > 0 {
		fmt.Fprintln(w, "\nThe cluster serves no PackageManifests: the OperatorHub listing was not checked.")
	}
}

// cell makes s safe in a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
