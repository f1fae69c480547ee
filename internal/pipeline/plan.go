package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/lint"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/registry"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/source/diff"
)

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
func PlanRun(ctx context.Context, o PlanOptions) (*report.Plan, error) {
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
	o.Catalog.History = o.gated()
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
func planOn(ctx context.Context, o PlanOptions, tip *catalog.Tip) (*report.Plan, error) {
	tgt, err := o.newTarget()
	if err != nil {
		return nil, err
	}
	s, err := openScopeOn(ctx, o.Options, scopeOptions{pr: o.PR, targetBranch: o.TargetBranch, plan: true}, tgt, tip)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	p := &report.Plan{SchemaVersion: report.PlanSchemaVersion, Cluster: o.Cluster, Artifacts: []report.PlanArtifact{}, Findings: []lint.Finding{}, Files: []gitops.FileChange{}}
	r := &run{Options: o.Options, changed: o.Changed, target: tgt, mc: s.mc}
	if s.diffErr != nil {
		p.Source = report.PlanSource{All: true, BaseFrom: diff.FromNone, Warnings: []string{fmt.Sprintf("change detection failed (%v): every version counts as changed", s.diffErr)}}
	} else if dr := s.diff; dr != nil {
		p.Source = report.PlanSource{Head: dr.Head, Base: dr.Base, BaseFrom: dr.BaseFrom, All: dr.All, Warnings: dr.Warnings}
	}
	pr, err := s.prepare(ctx, r, prepareMode{plan: true})
	if err != nil {
		return nil, err
	}
	if len(r.dirtyPaths) > 0 && !r.AllowDirty {
		p.Source.Warnings = append(p.Source.Warnings, (&DirtyError{Paths: r.dirtyPaths}).Error()+": run stops here")
	}
	next, listing := planContent(ctx, r, p, pr, s.state)
	changes, _, warning, err := s.render(ctx, next, true)
	if err != nil {
		return nil, err
	}
	if warning != "" {
		// One warning per line: the olm target says a line per
		// delisted version.
		p.Source.Warnings = append(p.Source.Warnings, strings.Split(warning, "\n")...)
	}
	files, patch, err := s.preview(changes)
	if err != nil {
		return nil, err
	}
	if files != nil {
		p.Files = files
	}
	p.Diff = patch
	planGraphs(ctx, r, p, pr.vs, s.state.Artifacts, next)
	p.Summarise(listing)
	return p, nil
}

// PlanClusters is PlanRun for each cluster of o (Options.Clusters, else
// the one of Options.Cluster), in order, on one catalog branch tip opened
// once (as run reads its clusters): one plan per cluster, all of the same
// catalog commit.
func PlanClusters(ctx context.Context, o PlanOptions) ([]*report.Plan, error) {
	o.defaults()
	tip, err := openPlanTip(ctx, o.Options)
	if err != nil {
		return nil, err
	}
	defer tip.Close()
	var out []*report.Plan
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
// prepare gave (its records made without digests) and the published
// state, and returns the merged artifacts to render and the listing
// changes a run would make (which the plan's Summary counts). The
// incremental plan passes only the touched artifacts' versions and state
// entries.
func planContent(ctx context.Context, r *run, p *report.Plan, pr *prepared, state *gitops.State) ([]model.ArtifactRecord, []model.Change) {
	p.Findings = pr.findings
	lint.Sort(p.Findings)
	if p.Findings == nil {
		p.Findings = []lint.Finding{}
	}
	p.Artifacts = planArtifacts(state.Artifacts, pr.next, pr.vs)
	p.Waiting = pr.waits
	p.Listed = listedAfter(p, pr.next)
	listing := append([]model.Change{}, pr.changes.List()...)
	if r.mc.DstHost() != "" {
		planImages(p.Artifacts, pr.vs, pr.verified, func(imgs []*report.PlanImage) { headAtDestination(ctx, r.mc, imgs) })
	}
	return pr.next, listing
}

// planArtifacts lists the artifacts whose listing changes between the
// previous state and next, and the changed versions of unchanged artifacts.
func planArtifacts(prev, next []model.ArtifactRecord, vs []*model.Version) []report.PlanArtifact {
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
	var out []report.PlanArtifact
	for _, a := range next {
		p, had := pa[a.Name]
		art := report.PlanArtifact{Name: a.Name}
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
			art.Versions = append(art.Versions, report.PlanVersion{Version: v.Version, Tag: v.Tag, Action: action})
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

// planImages fills the images of each added, modified or relisted
// version of arts (the version's images, each once and sorted, then its
// artifact): the source reference and its verification from verified;
// then at fills where each is at the destination (Destination,
// AtDestination and UnknownReason), called once with every image so that
// it can ask a registry for all of them together. at is the run's mirror
// report (mirroredAt) or a HEAD request per image (headAtDestination).
func planImages(arts []report.PlanArtifact, vs []*model.Version, verified map[string]model.Verification, at func(imgs []*report.PlanImage)) {
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
				pi := report.PlanImage{Source: r, NamedBy: chartImageSources(mv, r)}
				if res, ok := verified[r]; ok {
					pi.Verification = &res
				}
				arts[ai].Versions[vi].Images = append(arts[ai].Versions[vi].Images, pi)
			}
			jobs = append(jobs, job{ai, vi})
		}
	}
	var imgs []*report.PlanImage
	for _, j := range jobs {
		for k := range arts[j.a].Versions[j.v].Images {
			imgs = append(imgs, &arts[j.a].Versions[j.v].Images[k])
		}
	}
	at(imgs)
}

// chartImageSources says what named img among the images of v, a chart
// read for the plan's cluster (kind.ChartOf): the rendered templates (for
// the cluster, with its values file) and the image annotations of the
// chart and its subcharts (lint.Chart.Sources), spec.relatedImages, and
// spec.artifact for the chart itself; images are compared written in
// full (lint.FullImage). Nil for a version of another kind, or not read.
func chartImageSources(v *model.Version, img string) []lint.ImageSource {
	c := kind.ChartOf(v)
	if c == nil {
		return nil
	}
	if img == v.Ref() {
		return []lint.ImageSource{{Source: lint.SourceArtifact}}
	}
	full := lint.FullImage(img)
	out := append([]lint.ImageSource(nil), c.Sources[full]...)
	for _, r := range v.Manifest.Spec.RelatedImages {
		if lint.FullImage(r) == full {
			out = append(out, lint.ImageSource{Source: lint.SourceRelatedImages})
			break
		}
	}
	return out
}

// mirroredAt is planImages' destination lookup of a run that mirrored
// its images: dst maps a source reference to its destination (the mirror
// report), where the image is ("yes"). An image the report lacks is
// "unknown" at the destination, with the UnknownReason
// report.ReasonNotMirrored.
func mirroredAt(dst map[string]string) func(imgs []*report.PlanImage) {
	return func(imgs []*report.PlanImage) {
		for _, img := range imgs {
			img.Destination, img.AtDestination = dst[img.Source], "yes"
			if img.Destination == "" {
				img.AtDestination, img.UnknownReason = "unknown", report.ReasonNotMirrored
			}
		}
	}
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

// headAtDestination is planImages' destination lookup of a plan: it
// fills the Destination and AtDestination of each of imgs with one HEAD
// per destination reference (registry.CheckPresence, with the
// destination's credentials): "yes", "missing" (a not-found answer), or
// "unknown" with its UnknownReason (no read access, no answer, a
// reference that does not parse or map).
func headAtDestination(ctx context.Context, mc *mirror.Client, imgs []*report.PlanImage) {
	var wants []registry.Want
	var asked []*report.PlanImage
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
		return report.ReasonNoReadAccess
	case registry.KindForbidden:
		return report.ReasonDenied
	}
	return "no answer: " + shortError(err)
}

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
