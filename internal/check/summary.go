package check

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/go-git/go-git/v5/plumbing"
	yaml3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/operator-publish/publish/internal/crdcheck"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/render"
)

// What happened to an object between the base and the checkout.
const (
	Listed   = "listed"   // added, present: true
	Delisted = "delisted" // present: true -> false (or added delisted)
	Relisted = "relisted" // present: false -> true
	Removed  = "removed"  // the file is gone: Argo CD or Flux prune the object
	Changed  = "changed"  // other fields changed
	Added    = "added"    // an object of no artifact, added
)

// ArtifactChange is what a change does to one artifact on one cluster:
// Action is that of its Artifact object ("" when only versions changed),
// Fields the Artifact's changed fields (dotted paths, present excepted),
// Versions the changed ArtifactVersions.
type ArtifactChange struct {
	Artifact string          `json:"artifact"`
	Action   string          `json:"action,omitempty"`
	Fields   []string        `json:"fields,omitempty"`
	Versions []VersionChange `json:"versions,omitempty"`
}

// VersionChange is one ArtifactVersion that changed: Version is its
// spec.tag (metadata.name when it has none).
type VersionChange struct {
	Version string   `json:"version"`
	Action  string   `json:"action"`
	Fields  []string `json:"fields,omitempty"`
}

// FileChange is a rendered object of no artifact (rendered/<cluster>/
// _cluster/, what the overlay adds) or of a kind check does not know,
// that was added, removed or changed.
type FileChange struct {
	Path   string   `json:"path"`
	Action string   `json:"action"`
	Fields []string `json:"fields,omitempty"`
}

type kobj = map[string]any

func yamlUnmarshal(data []byte, v any) error { return yaml.Unmarshal(data, v) }

func plumbingHash(s string) plumbing.Hash { return plumbing.NewHash(s) }

func parse(data []byte) kobj {
	if data == nil {
		return nil
	}
	var o kobj
	if err := yaml.Unmarshal(data, &o); err != nil {
		return nil
	}
	return o
}

func str(o kobj, keys ...string) string {
	var cur any = o
	for _, k := range keys {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	s, _ := cur.(string)
	return s
}

// present is spec.present; an object without it counts as present.
func present(o kobj) bool {
	spec, _ := o["spec"].(map[string]any)
	if b, ok := spec["present"].(bool); ok {
		return b
	}
	return true
}

// action classifies one object's change; "" for none.
func action(old, now kobj, oldOK, nowOK bool) string {
	switch {
	case !oldOK && !nowOK:
		return ""
	case !nowOK:
		return Removed
	case !oldOK:
		if present(now) {
			return Listed
		}
		return Delisted
	case present(old) && !present(now):
		return Delisted
	case !present(old) && present(now):
		return Relisted
	}
	if len(fields(old, now)) > 0 {
		return Changed
	}
	return ""
}

// maxFields is how many changed fields one object lists.
const maxFields = 8

// fields returns the dotted paths of the leaves that differ between two
// objects, spec.present excepted (it is the action), at most maxFields
// (then "…").
func fields(old, now kobj) []string {
	if old == nil || now == nil {
		return nil
	}
	a, b := map[string]string{}, map[string]string{}
	flatten("", old, a)
	flatten("", now, b)
	var out []string
	for _, k := range union(toAny(a), toAny(b)) {
		if k == "spec.present" {
			continue
		}
		if x, ok := a[k]; !ok || x != b[k] {
			out = append(out, k)
		} else if _, ok := b[k]; !ok {
			out = append(out, k)
		}
	}
	if len(out) > maxFields {
		out = append(out[:maxFields], "…")
	}
	return out
}

func toAny(m map[string]string) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}

func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			out[prefix] = "{}"
		}
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, e, out)
		}
	case []any:
		if len(x) == 0 {
			out[prefix] = "[]"
		}
		for i, e := range x {
			flatten(prefix+"["+strconv.Itoa(i)+"]", e, out)
		}
	default:
		data, _ := json.Marshal(x)
		out[prefix] = string(data)
	}
}

// compare returns what changed on cluster between the rendered files old
// (base) and now (checkout), and the files removed.
func compare(cluster string, old, now map[string][]byte) ([]ArtifactChange, []FileChange, []string) {
	arts := map[string]*ArtifactChange{}
	get := func(a string) *ArtifactChange {
		if arts[a] == nil {
			arts[a] = &ArtifactChange{Artifact: a}
		}
		return arts[a]
	}
	var other []FileChange
	var deleted []string
	for _, p := range union(old, now) {
		o, oldOK := old[p]
		n, nowOK := now[p]
		if oldOK && nowOK && string(o) == string(n) {
			continue
		}
		if !nowOK {
			deleted = append(deleted, p)
		}
		oo, no := parse(o), parse(n)
		act := action(oo, no, oldOK, nowOK)
		if act == "" {
			continue
		}
		obj := no
		if obj == nil {
			obj = oo
		}
		// The object's owner, not its folder: an overlay or a hand edit
		// may put a file anywhere below rendered/<cluster>.
		art := render.ArtifactOf(obj)
		if art == "" {
			art = "_cluster"
		}
		kind := str(obj, "kind")
		switch {
		case art != "_cluster" && kind == "Artifact":
			ac := get(art)
			ac.Action = act
			if act != Listed && act != Removed {
				ac.Fields = fields(oo, no)
			}
		case art != "_cluster" && kind == "ArtifactVersion":
			v := str(obj, "spec", "tag")
			if v == "" {
				v = str(obj, "metadata", "name")
			}
			vc := VersionChange{Version: v, Action: act}
			if act != Listed && act != Removed {
				vc.Fields = fields(oo, no)
			}
			ac := get(art)
			ac.Versions = append(ac.Versions, vc)
		default:
			fc := FileChange{Path: p, Action: act}
			switch act {
			case Listed, Delisted:
				if !oldOK {
					fc.Action = Added
				}
			}
			if oldOK && nowOK {
				fc.Fields = fields(oo, no)
			}
			other = append(other, fc)
		}
	}
	var out []ArtifactChange
	for _, a := range sortedKeys(arts) {
		ac := arts[a]
		sort.SliceStable(ac.Versions, func(i, j int) bool { return versionLess(ac.Versions[i].Version, ac.Versions[j].Version) })
		out = append(out, *ac)
	}
	return out, other, deleted
}

func versionLess(a, b string) bool {
	va, ea := semver.ParseTolerant(a)
	vb, eb := semver.ParseTolerant(b)
	if ea == nil && eb == nil {
		return va.LT(vb)
	}
	return a < b
}

// crdErrorLine returns the line of data where the first field that err
// (an error of crdcheck's Validate) names is, or its deepest existing
// parent; 1 when err is not a *crdcheck.ObjectError or none of its fields
// is in data.
func crdErrorLine(data []byte, err error) int {
	var oe *crdcheck.ObjectError
	var doc yaml3.Node
	if !errors.As(err, &oe) || yaml3.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return 1
	}
	for _, f := range oe.Fields {
		if l := nodeLine(doc.Content[0], f.Field); l > 0 {
			return l
		}
	}
	return 1
}

// keyLine returns the line of the key at the dotted path p of data, 1
// when there is none.
func keyLine(data []byte, p string) int {
	var doc yaml3.Node
	if err := yaml3.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return 1
	}
	if l := nodeLine(doc.Content[0], p); l > 0 {
		return l
	}
	return 1
}

// nodeLine returns the line of the key at the dotted path p (with [i]
// indexes) below n, or of its deepest existing parent; 0 when not even
// the first key exists.
func nodeLine(n *yaml3.Node, p string) int {
	line := 0
	for _, seg := range splitPath(p) {
		switch {
		case n.Kind == yaml3.MappingNode && !strings.HasPrefix(seg, "["):
			found := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == seg {
					line, n, found = n.Content[i].Line, n.Content[i+1], true
					break
				}
			}
			if !found {
				return line
			}
		case n.Kind == yaml3.SequenceNode && strings.HasPrefix(seg, "["):
			i, err := strconv.Atoi(strings.Trim(seg, "[]"))
			if err != nil || i < 0 || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
		default:
			return line
		}
	}
	return line
}

func splitPath(p string) []string {
	var out []string
	for _, part := range strings.Split(p, ".") {
		for part != "" {
			i := strings.Index(part, "[")
			switch {
			case i < 0:
				out = append(out, part)
				part = ""
			case i > 0:
				out = append(out, part[:i])
				part = part[i:]
			default:
				j := strings.Index(part, "]")
				if j < 0 {
					return out
				}
				out = append(out, part[:j+1])
				part = part[j+1:]
			}
		}
	}
	return out
}

// Markdown is the report for the job summary: the verdict, one row per
// cluster, the problems, and what the change does on each cluster.
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("## publish check\n\n")
	b.WriteString(r.verdict(true) + "\n\n")
	b.WriteString("| cluster | re-rendered from `" + render.GeneratedDir + "/<cluster>` | rendered files | objects checked against the CRDs | problems |\n|---|---|---|---|---|\n")
	for _, c := range r.Clusters {
		if !c.Checked {
			fmt.Fprintf(&b, "| `%s` | %s | | | |\n", c.Name, mdCell(c.Skipped))
			continue
		}
		fmt.Fprintf(&b, "| `%s` | yes | %d | %d | %d |\n", c.Name, c.Files, c.Objects, c.Problems)
	}
	if len(r.Findings) > 0 {
		b.WriteString("\n### Problems\n\n")
		for _, f := range r.Findings {
			loc := f.Path
			if f.Line > 0 {
				loc += ":" + strconv.Itoa(f.Line)
			}
			fmt.Fprintf(&b, "- **%s** `%s`: %s [`%s`]", f.Severity, loc, mdCell(f.Message), f.Rule)
			if f.Hint != "" {
				b.WriteString(" — " + mdCell(f.Hint))
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "\n### What this change does, by cluster\n\n%s\n", r.compared())
	for _, c := range r.Clusters {
		fmt.Fprintf(&b, "\n#### `%s`\n\n", c.Name)
		if len(c.Changes) == 0 && len(c.Other) == 0 {
			b.WriteString("No change.\n")
			continue
		}
		if len(c.Changes) > 0 {
			b.WriteString("| artifact | Artifact | versions | changed fields |\n|---|---|---|---|\n")
			for _, a := range c.Changes {
				act := a.Action
				if act == "" {
					act = "—"
				}
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", a.Artifact, act, mdCell(versionsText(a.Versions, "`")), mdCell(fieldsText(a)))
			}
		}
		if len(c.Other) > 0 {
			b.WriteString("\nOther objects:\n\n")
			for _, f := range c.Other {
				fmt.Fprintf(&b, "- %s `%s`", f.Action, f.Path)
				if len(f.Fields) > 0 {
					b.WriteString(": " + strings.Join(f.Fields, ", "))
				}
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

// Text is the report for the terminal and the job log.
func (r *Report) Text() string {
	var b strings.Builder
	for _, c := range r.Clusters {
		if !c.Checked {
			fmt.Fprintf(&b, "cluster %s: %s\n", c.Name, c.Skipped)
			continue
		}
		fmt.Fprintf(&b, "cluster %s: re-rendered from %s, %s, %s checked against the CRDs, %s\n", c.Name, render.GeneratedBase(c.Name), lint.Count(c.Files, "rendered file"), lint.Count(c.Objects, "object"), lint.Count(c.Problems, "problem"))
	}
	fmt.Fprintf(&b, "\n%s\n", r.compared())
	for _, c := range r.Clusters {
		if len(c.Changes) == 0 && len(c.Other) == 0 {
			fmt.Fprintf(&b, "  %s: no change\n", c.Name)
			continue
		}
		for _, a := range c.Changes {
			var parts []string
			if a.Action != "" {
				parts = append(parts, "artifact "+a.Action)
			}
			if v := versionsText(a.Versions, ""); v != "" {
				parts = append(parts, v)
			}
			if f := fieldsText(a); f != "" {
				parts = append(parts, f)
			}
			fmt.Fprintf(&b, "  %s: %s: %s\n", c.Name, a.Artifact, strings.Join(parts, "; "))
		}
		for _, f := range c.Other {
			fmt.Fprintf(&b, "  %s: %s %s", c.Name, f.Action, f.Path)
			if len(f.Fields) > 0 {
				b.WriteString(": " + strings.Join(f.Fields, ", "))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n" + r.verdict(false) + "\n")
	return b.String()
}

// compared says what the summary compares.
func (r *Report) compared() string {
	head := "the checkout"
	if r.Head != "" {
		head = "the checkout (" + short(r.Head) + ")"
	}
	if r.Base == "" {
		return "No base to compare with: every rendered object of " + head + " counts as added."
	}
	from := map[string]string{
		"flag":       "--base",
		"merge-base": "the merge base with the target branch",
		"ci":         "CI_MERGE_REQUEST_DIFF_BASE_SHA",
		"parent":     "HEAD's parent",
	}[r.BaseFrom]
	if from == "" {
		from = r.BaseFrom
	}
	return fmt.Sprintf("Rendered objects of %s compared with base %s (%s).", head, short(r.Base), from)
}

func (r *Report) verdict(md bool) string {
	checked := r.Checked()
	n := r.Errors()
	warn := len(r.Findings) - n
	s := fmt.Sprintf("%d of %s re-rendered and checked", checked, lint.Count(len(r.Clusters), "cluster"))
	if warn > 0 {
		s += ", " + lint.Count(warn, "warning")
	}
	if not := r.NotChecked(); len(not) > 0 {
		s += "; not checked: " + strings.Join(not, ", ")
	}
	if checked == 0 {
		what := "nothing checked: " + s
		if len(r.Clusters) == 0 {
			what = "nothing checked: no cluster to check (--cluster, the clusters of publish.yaml, or a " + render.ClustersDir + "/<cluster> with its " + render.RenderedDir + "/<cluster>)"
		}
		if n > 0 {
			what = "check failed: " + lint.Count(n, "problem") + "; " + what
		} else {
			what = "check: " + what
		}
		if md {
			return "**" + what + "**."
		}
		return what
	}
	if n == 0 {
		if md {
			return "**check ok**: " + s + "; `rendered/` of the checked clusters is what the overlays render, every object passes its CRD."
		}
		return "check ok: " + s
	}
	if md {
		return fmt.Sprintf("**check failed: %s**: %s.", lint.Count(n, "problem"), s)
	}
	return fmt.Sprintf("check failed: %s; %s", lint.Count(n, "problem"), s)
}

// Checked returns how many clusters were re-rendered and checked.
func (r *Report) Checked() int {
	n := 0
	for _, c := range r.Clusters {
		if c.Checked {
			n++
		}
	}
	return n
}

// NotChecked returns the names of the clusters that were not re-rendered
// (Cluster.Skipped says why), sorted as r.Clusters.
func (r *Report) NotChecked() []string {
	var out []string
	for _, c := range r.Clusters {
		if !c.Checked {
			out = append(out, c.Name)
		}
	}
	return out
}

func versionsText(vs []VersionChange, q string) string {
	var parts []string
	for _, v := range vs {
		s := q + v.Version + q + " " + v.Action
		if len(v.Fields) > 0 {
			s += " (" + strings.Join(v.Fields, ", ") + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func fieldsText(a ArtifactChange) string { return strings.Join(a.Fields, ", ") }

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
