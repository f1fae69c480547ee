package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/source/diff"
)

// PlanSchemaVersion is the version of the plan JSON (docs/plan-json.md).
const PlanSchemaVersion = 1

// Plan is what `publish plan` reports: what a `publish run` of this source
// would list, upgrade, delist and relist, the images it would mirror, the
// lint findings, and the rendered files it would change. Its JSON form is
// documented in docs/plan-json.md.
type Plan struct {
	SchemaVersion int                 `json:"schemaVersion"`
	Source        PlanSource          `json:"source"`
	Cluster       string              `json:"cluster"`
	Summary       PlanSummary         `json:"summary"`
	Artifacts     []PlanArtifact      `json:"artifacts"`
	Findings      []lint.Finding      `json:"findings"`
	Files         []gitops.FileChange `json:"files"`
	Diff          string              `json:"diff"`
	// changes are the listing changes a run would make, counted in the
	// Summary the way the run counts them (nil: counted from Artifacts).
	changes []model.Change
}

// PlanSource says what was compared.
type PlanSource struct {
	Head     string   `json:"head,omitempty"`
	Base     string   `json:"base,omitempty"`
	BaseFrom string   `json:"baseFrom,omitempty"` // flag, merge-base, ci, state, none
	All      bool     `json:"all"`                // no usable base: every version counted as changed
	Warnings []string `json:"warnings,omitempty"`
}

// PlanSummary counts the plan. Listed, Upgraded, Delisted and Relisted
// count the listing changes as the run's commit subject does: one per
// listed or relisted artifact, one per new version of a listed artifact,
// one per delisted artifact, and one per delisted or relisted version.
type PlanSummary struct {
	Listed        int `json:"listed"`
	Upgraded      int `json:"upgraded"`
	Delisted      int `json:"delisted"`
	Relisted      int `json:"relisted"`
	Errors        int `json:"errors"`
	Warnings      int `json:"warnings"`
	ImagesToCopy  int `json:"imagesToMirror"`
	ImagesMissing int `json:"imagesMissing"`
	// ImagesUnknown counts the images to mirror the destination did not
	// say it has or lacks (PlanImage.UnknownReason says why): they are in
	// ImagesToCopy, not in ImagesMissing.
	ImagesUnknown int `json:"imagesUnknown"`
	FilesChanged  int `json:"filesChanged"`
}

// PlanArtifact is one artifact whose listing or versions change.
type PlanArtifact struct {
	Name     string        `json:"name"`
	Action   string        `json:"action"` // listed, upgraded, delisted, relisted, changed
	Versions []PlanVersion `json:"versions"`
}

// PlanVersion is one version of a PlanArtifact that changes.
type PlanVersion struct {
	Version string      `json:"version"`
	Tag     string      `json:"tag"`
	Action  string      `json:"action"` // added, modified, delisted, relisted
	Images  []PlanImage `json:"images,omitempty"`
}

// PlanImage is one image a run would mirror for a version.
type PlanImage struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	// AtDestination: "yes", "missing", or "unknown" (no read access or no
	// answer: the plan never needs write credentials).
	AtDestination string `json:"atDestination"`
	// UnknownReason is the short cause of an "unknown" AtDestination:
	// "no read access (401)", "denied (403)", "no answer: <error>", "not a
	// reference: <error>", "no destination: <error>", or "not in the
	// mirror report" (the plan of a run's pull request); empty otherwise.
	UnknownReason string `json:"unknownReason,omitempty"`
	// Verification is the image's signature check against the publish.yaml
	// verify policy (absent without a policy): status verified, unsigned,
	// untrusted, identity or not-required (docs/plan-json.md).
	Verification *model.Verification `json:"verification,omitempty"`
}

// PlanOptions configures PlanRun. Catalog needs read access only.
type PlanOptions struct {
	Options
	// PR compares HEAD with its merge base on TargetBranch (pull-request
	// review); else with the source commit of the last publish, like run.
	PR           bool
	TargetBranch string
}

// PlanRun is `publish plan`: it makes the Plan without any registry or Git
// write, through the engine `publish run` uses (openScope: the
// incremental read of the Git objects of the branch tip when it applies,
// else the full read; the render into a temporary directory, never
// committed). Bundles are read at the source and the destination only gets
// HEAD requests.
//
// It returns the plan and an error only for infrastructure problems; lint
// errors are findings in the plan (Summary.Errors), which the CLI turns into
// exit code 1.
func PlanRun(ctx context.Context, o PlanOptions) (*Plan, error) {
	o.defaults()
	if len(o.Clusters) == 1 {
		o.Options = o.forCluster(o.Clusters[0])
	} else if len(o.Clusters) > 1 {
		return nil, errors.New("PlanRun: one cluster at a time (PlanClusters)")
	}
	tip, err := openPlanTip(ctx, o.Options)
	if err != nil {
		return nil, err
	}
	defer tip.Close()
	return planOn(ctx, o, tip)
}

// openPlanTip opens the catalog branch tip a plan reads, saying when the
// branch is new.
func openPlanTip(ctx context.Context, o Options) (*catalog.Tip, error) {
	tip, err := catalog.OpenTip(ctx, o.Catalog)
	if err != nil {
		return nil, err
	}
	if tip.NewBranch() {
		o.logf("catalog: branch %s does not exist in %s yet: it will be created from the template (check --catalog-branch if that is not what you want)", o.Catalog.Branch, o.Catalog.URL)
	}
	return tip, nil
}

// planOn is the plan of o's one cluster on tip, which the caller opened and
// closes (PlanClusters: every cluster on the same tip, as run does).
func planOn(ctx context.Context, o PlanOptions, tip *catalog.Tip) (*Plan, error) {
	tgt, err := o.newTarget()
	if err != nil {
		return nil, err
	}
	s, err := openScopeOn(ctx, o.Options, scopeOptions{pr: o.PR, targetBranch: o.TargetBranch, plan: true}, tgt, tip)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	p := &Plan{SchemaVersion: PlanSchemaVersion, Cluster: o.Cluster, Artifacts: []PlanArtifact{}, Findings: []lint.Finding{}, Files: []gitops.FileChange{}}
	r := &run{Options: o.Options, changed: o.Changed, target: tgt, mc: s.mc}
	if s.diffErr != nil {
		p.Source = PlanSource{All: true, BaseFrom: diff.FromNone, Warnings: []string{fmt.Sprintf("change detection failed (%v): every version counts as changed", s.diffErr)}}
	} else if dr := s.diff; dr != nil {
		p.Source = PlanSource{Head: dr.Head, Base: dr.Base, BaseFrom: dr.BaseFrom, All: dr.All, Warnings: dr.Warnings}
	}
	pr, err := s.prepare(ctx, r, prepareMode{plan: true})
	if err != nil {
		return nil, err
	}
	if len(r.dirtyPaths) > 0 && !r.AllowDirty {
		p.Source.Warnings = append(p.Source.Warnings, (&DirtyError{Paths: r.dirtyPaths}).Error()+": run stops here")
	}
	next, err := planContent(ctx, r, p, pr, s.state)
	if err != nil {
		return nil, err
	}
	changes, _, warning, err := s.render(ctx, next, true)
	if err != nil {
		return nil, err
	}
	if warning != "" {
		p.Source.Warnings = append(p.Source.Warnings, warning)
	}
	files, patch, err := s.preview(changes)
	if err != nil {
		return nil, err
	}
	if files != nil {
		p.Files = files
	}
	p.Diff = patch
	p.summarise()
	return p, nil
}

// PlanClusters is PlanRun for each cluster of o (Options.Clusters, else
// the one of Options.Cluster), in order, on one catalog branch tip opened
// once (as run reads its clusters): one plan per cluster, all of the same
// catalog commit.
func PlanClusters(ctx context.Context, o PlanOptions) ([]*Plan, error) {
	o.defaults()
	tip, err := openPlanTip(ctx, o.Options)
	if err != nil {
		return nil, err
	}
	defer tip.Close()
	var out []*Plan
	for _, c := range o.clusterList() {
		co := o
		co.Options = o.forCluster(c)
		if len(o.Clusters) > 1 {
			co.Log = withCluster(o.Log, c.Name)
		}
		p, err := planOn(ctx, co, tip)
		if err != nil {
			if len(o.Clusters) > 1 {
				err = fmt.Errorf("cluster %s: %w", c.Name, err)
			}
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

// planContent fills the findings, artifacts and images of p from what
// prepare gave and the published state, and returns the merged artifacts
// to render. The incremental plan passes only the touched artifacts'
// versions and state entries.
func planContent(ctx context.Context, r *run, p *Plan, pr *prepared, state *gitops.State) ([]model.ArtifactRecord, error) {
	vs, verified := pr.vs, pr.verified
	p.Findings = pr.findings
	lint.Sort(p.Findings)
	if p.Findings == nil {
		p.Findings = []lint.Finding{}
	}

	mapped := r.mc.DstHost() != ""
	current, err := currentRecords(DestinationOf(r.mc), vs, nil, state.Artifacts)
	if err != nil {
		return nil, err
	}
	next := render.Merge(state.Artifacts, current)
	p.Artifacts = planArtifacts(state.Artifacts, next, vs)
	p.changes = append([]model.Change{}, render.Diff(state.Artifacts, next).List()...)
	if mapped {
		planImages(ctx, r.mc, p.Artifacts, vs, verified)
	}
	return next, nil
}

// planArtifacts lists the artifacts whose listing changes between the
// previous state and next, and the changed versions of unchanged artifacts.
func planArtifacts(prev, next []model.ArtifactRecord, vs []*model.Version) []PlanArtifact {
	pa := map[string]model.ArtifactRecord{}
	for _, a := range prev {
		pa[a.Name] = a
	}
	modified := map[model.Key]bool{}
	for _, v := range vs {
		if v.Changed {
			modified[v.Key()] = true
		}
	}
	var out []PlanArtifact
	for _, a := range next {
		p, had := pa[a.Name]
		art := PlanArtifact{Name: a.Name}
		switch {
		case !had && a.Present:
			art.Action = "listed"
		case had && p.Present && !a.Present:
			art.Action = "delisted"
		case had && !p.Present && a.Present:
			art.Action = "relisted"
		}
		pv := map[string]model.VersionRecord{}
		for _, v := range p.Versions {
			pv[v.Tag] = v
		}
		for _, v := range a.Versions {
			old, ok := pv[v.Tag]
			var action string
			switch {
			case !ok && v.Present:
				action = "added"
			case ok && old.Present && !v.Present:
				action = "delisted"
			case ok && !old.Present && v.Present:
				action = "relisted"
			case v.Present && modified[model.Key{Artifact: a.Name, Version: v.Version}]:
				action = "modified"
			}
			if action == "" {
				continue
			}
			art.Versions = append(art.Versions, PlanVersion{Version: v.Version, Tag: v.Tag, Action: action})
			if action == "added" && art.Action == "" {
				art.Action = "upgraded"
			}
		}
		if art.Action == "" && len(art.Versions) > 0 {
			art.Action = "changed"
		}
		if art.Action != "" {
			out = append(out, art)
		}
	}
	return out
}

// planImages fills the images each added, modified or relisted version
// would mirror, with HEAD requests at the destination.
func planImages(ctx context.Context, mc *mirror.Client, arts []PlanArtifact, vs []*model.Version, verified map[string]model.Verification) {
	byKey := map[model.Key]*model.Version{}
	for _, v := range vs {
		byKey[v.Key()] = v
	}
	type job struct{ a, v int }
	var jobs []job
	for ai := range arts {
		for vi, v := range arts[ai].Versions {
			if v.Action == "delisted" {
				continue
			}
			mv, ok := byKey[model.Key{Artifact: arts[ai].Name, Version: v.Version}]
			if !ok {
				continue
			}
			refs := append(unique(mv.Images), mv.Ref())
			for _, r := range refs {
				pi := PlanImage{Source: r}
				if res, ok := verified[r]; ok {
					pi.Verification = &res
				}
				arts[ai].Versions[vi].Images = append(arts[ai].Versions[vi].Images, pi)
			}
			jobs = append(jobs, job{ai, vi})
		}
	}
	var imgs []*PlanImage
	for _, j := range jobs {
		for k := range arts[j.a].Versions[j.v].Images {
			imgs = append(imgs, &arts[j.a].Versions[j.v].Images[k])
		}
	}
	headAtDestination(ctx, mc, imgs)
}

func unique(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// headAtDestination fills the Destination and AtDestination of each of
// imgs with one HEAD per destination reference (registry.CheckPresence,
// with the destination's credentials): "yes", "missing" (a not-found
// answer), or "unknown" with its UnknownReason (no read access, no answer,
// a reference that does not parse or map).
func headAtDestination(ctx context.Context, mc *mirror.Client, imgs []*PlanImage) {
	var wants []registry.Want
	var asked []*PlanImage
	for _, img := range imgs {
		src, err := mc.ParseReference(img.Source)
		if err != nil {
			img.AtDestination, img.UnknownReason = "unknown", "not a reference: "+shortError(err)
			continue
		}
		dst, err := mc.Destination(src)
		if err != nil {
			img.AtDestination, img.UnknownReason = "unknown", "no destination: "+shortError(err)
			continue
		}
		img.Destination = dst.String()
		wants = append(wants, registry.Want{Ref: dst})
		asked = append(asked, img)
	}
	for i, f := range registry.CheckPresence(ctx, wants, registry.DefaultPresenceConcurrency, mc.DstOptions()...) {
		switch f.State {
		case registry.Missing:
			asked[i].AtDestination = "missing"
		case registry.Unknown:
			// 401/403 without read credentials, or no answer: the plan
			// does not need to know, and never asks for write access.
			asked[i].AtDestination, asked[i].UnknownReason = "unknown", unknownReason(f.Err)
		default:
			asked[i].AtDestination = "yes"
		}
	}
}

// unknownReason is the short cause of a HEAD at the destination that
// neither found nor missed the image, from registry.Classify.
func unknownReason(err error) string {
	switch registry.Classify(err) {
	case registry.KindUnauthorized:
		return reasonNoReadAccess
	case registry.KindForbidden:
		return reasonDenied
	}
	return "no answer: " + shortError(err)
}

// The UnknownReasons of a refused HEAD (Markdown says what to do for
// them), and of an image a run's mirror report lacks (planImagesMirrored).
const (
	reasonNoReadAccess = "no read access (401)"
	reasonDenied       = "denied (403)"
	reasonNotMirrored  = "not in the mirror report"
)

// maxReasonLen caps the error text of an UnknownReason.
const maxReasonLen = 80

// shortError is the innermost error of err's chain (the cause without the
// request's URL), cut to maxReasonLen characters.
func shortError(err error) string {
	if err == nil {
		return "no error"
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	msg := err.Error()
	if r := []rune(msg); len(r) > maxReasonLen {
		msg = string(r[:maxReasonLen-1]) + "…"
	}
	return msg
}

func (p *Plan) summarise() {
	s := PlanSummary{}
	if p.changes != nil {
		n := model.CountChanges(p.changes)
		s.Listed, s.Upgraded, s.Delisted, s.Relisted = n[model.ChangeListed], n[model.ChangeUpgraded], n[model.ChangeDelisted], n[model.ChangeRelisted]
	}
	for _, a := range p.Artifacts {
		if p.changes != nil {
			countImages(&s, a)
			continue
		}
		switch a.Action {
		case "listed":
			s.Listed++
		case "upgraded":
			s.Upgraded++
		case "delisted":
			s.Delisted++
		case "relisted":
			s.Relisted++
		}
		countImages(&s, a)
	}
	for _, f := range p.Findings {
		switch f.Severity {
		case lint.Error:
			s.Errors++
		case lint.Warning:
			s.Warnings++
		}
	}
	s.FilesChanged = len(p.Files)
	p.Summary = s
}

// countImages adds a's images to mirror, and those missing and unknown at
// the destination, to s.
func countImages(s *PlanSummary, a PlanArtifact) {
	for _, v := range a.Versions {
		for _, img := range v.Images {
			s.ImagesToCopy++
			switch img.AtDestination {
			case "missing":
				s.ImagesMissing++
			case "unknown":
				s.ImagesUnknown++
			}
		}
	}
}

// maxDiffLines is where the Markdown plan stops showing the diff inline.
const maxDiffLines = 400

// Markdown renders the plan for a PR comment or job summary.
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
		if lines > maxDiffLines {
			d = strings.Join(strings.SplitN(d, "\n", maxDiffLines+1)[:maxDiffLines], "\n") + fmt.Sprintf("\n… %d more lines: see the plan JSON\n", lines-maxDiffLines)
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
		refused = refused || r == reasonNoReadAccess || r == reasonDenied
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

// markdownSignatures writes the signature status of every image the plan
// verified (nothing without a verify policy).
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
	fmt.Fprintf(b, "### Signatures: %d images\n\n| image | status | policy | signature |\n|---|---|---|---|\n%s\n\n", len(rows), strings.Join(rows, "\n"))
}
