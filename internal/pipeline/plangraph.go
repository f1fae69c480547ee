package pipeline

import (
	"context"
	"fmt"

	"github.com/operator-publish/publish/internal/kind"
	"github.com/operator-publish/publish/internal/manifest"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/report"
)

// planGraphs sets p.Graphs: the upgrade graph (report.NewPlanGraph) of
// every changed package of bundles of the plan, between the versions the
// published state lists (previous) and those the plan's records list
// (next). The bundles of the package's versions that prepare did not read
// (unchanged since the last publish) are read for it, after the render;
// one that cannot be read is drawn without its own edges, with a warning
// in the plan.
func planGraphs(ctx context.Context, r *run, p *report.Plan, vs []*model.Version, previous, next []model.ArtifactRecord) {
	changed := map[string]bool{}
	for _, a := range p.Artifacts {
		changed[a.Name] = true
	}
	var unread []*model.Version
	byArt := map[string][]*model.Version{}
	for _, v := range vs {
		if !changed[v.Manifest.Artifact] || v.Kind() != manifest.TypeBundle {
			continue
		}
		byArt[v.Manifest.Artifact] = append(byArt[v.Manifest.Artifact], v)
		if v.Content == nil && v.ReadErr == nil {
			unread = append(unread, v)
		}
	}
	if len(unread) > 0 {
		if err := readVersions(ctx, r.kindEnv(r.mc), unread); err != nil {
			p.Source.Warnings = append(p.Source.Warnings, fmt.Sprintf("upgrade graphs: reading the unchanged bundles: %v (drawn without their edges)", err))
		}
	}
	listed := func(arts []model.ArtifactRecord, name string) []string {
		var out []string
		for _, a := range arts {
			if a.Name != name || !a.Present {
				continue
			}
			for _, v := range a.Versions {
				if v.Present {
					out = append(out, v.Version)
				}
			}
		}
		return out
	}
	for _, name := range sortedKeys(changed) {
		avs := byArt[name]
		if len(avs) == 0 {
			continue // a chart, or an artifact gone from the package repo
		}
		bundles := map[string]report.GraphBundle{}
		for _, v := range avs {
			b := kind.BundleOf(v)
			if b == nil || b.CSV == nil {
				continue
			}
			bundles[v.Manifest.Version.String()] = report.GraphBundle{
				Version: v.Manifest.Version.String(), CSVName: b.CSVName, Replaces: b.CSV.Spec.Replaces,
				Skips: b.CSV.Spec.Skips, SkipRange: b.CSV.Annotations["olm.skipRange"], Channels: b.Channels,
			}
		}
		p.Graphs = append(p.Graphs, report.NewPlanGraph(name, listed(previous, name), listed(next, name), bundles))
	}
}

// listedAfter is report.Plan.Listed: the versions next lists of the
// artifacts p changes or holds back, ascending as next records them
// (model.SortRecords); nil when there is none.
func listedAfter(p *report.Plan, next []model.ArtifactRecord) map[string][]string {
	want := map[string]bool{}
	for _, a := range p.Artifacts {
		want[a.Name] = true
	}
	for _, w := range p.Waiting {
		want[w.Artifact] = true
	}
	if len(want) == 0 {
		return nil
	}
	out := map[string][]string{}
	for _, a := range next {
		if !want[a.Name] {
			continue
		}
		vs := []string{}
		for _, v := range a.Versions {
			if a.Present && v.Present {
				vs = append(vs, v.Version)
			}
		}
		out[a.Name] = vs
	}
	return out
}
