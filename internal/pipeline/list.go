package pipeline

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/render"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/rollout"
	"github.com/operator-publish/publish/internal/seed"
)

// List is `publish list`: what the catalog repo o lists on each cluster
// (every state file of its branch tip, publish/state/<cluster>.yaml; a
// catalog of the older single state file is read as the first run would
// upgrade it, in memory), or on clusters only when given. It reads the
// catalog alone: no package repo, no registry. Errors: the catalog cannot
// be opened, a state file does not parse (*InputError naming it), a
// cluster asked for that the catalog has no state of (*InputError).
func List(ctx context.Context, o gitops.Options, clusters []string) (*report.Listing, error) {
	return ListGated(ctx, o, clusters, nil, time.Time{})
}

// ListGated is List with the gates of publish.yaml (gates: cluster -> its
// clusters.<name>.after) judged at now: on a cluster with gates, every
// version its first upstream cluster lists that it does not list (with
// the same bundle digest) is report.Waiting, with why (rollout.Gates.Check
// over the upstream clusters' catalog histories) or, when its gates
// passed, due. Errors are List's, and a history that cannot be read.
func ListGated(ctx context.Context, o gitops.Options, clusters []string, gates map[string][]rollout.Gate, now time.Time) (*report.Listing, error) {
	o.History = len(gates) > 0
	tip, err := catalog.OpenTip(ctx, o)
	if err != nil {
		return nil, err
	}
	defer tip.Close()
	files, err := tip.Files(gitops.StateDir[:len("publish")], nil)
	if err != nil {
		return nil, err
	}
	cat := render.Files(files)
	if _, err := seed.Migrate(cat); err != nil {
		return nil, err
	}
	states := map[string][]model.ArtifactRecord{}
	for p := range cat {
		c, ok := gitops.StateCluster(p)
		if !ok || len(clusters) > 0 && !slices.Contains(clusters, c) {
			continue
		}
		st, err := gitops.ReadState(cat, c)
		if err != nil {
			return nil, inputErr(err)
		}
		states[c] = st.Artifacts
	}
	for _, c := range clusters {
		if _, ok := states[c]; !ok {
			return nil, inputErr(fmt.Errorf("--cluster %s: the catalog %s (branch %s) has no state of that cluster (%s): nothing was published to it", c, o.URL, o.Branch, gitops.StatePath(c)))
		}
	}
	l := report.NewListing(tip.Head(), states)
	for _, c := range l.Clusters {
		if err := addWaiting(ctx, tip, cat, l, c, gates[c], states[c], now); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// addWaiting marks in l the versions that wait on cluster c, whose gates
// are gs and records mine, at now (ListGated).
func addWaiting(ctx context.Context, tip *catalog.Tip, cat render.Files, l *report.Listing, c string, gs []rollout.Gate, mine []model.ArtifactRecord, now time.Time) error {
	if len(gs) == 0 {
		return nil
	}
	g := &rollout.Gates{Cluster: c, Gates: gs, Histories: map[string]*catalog.History{}}
	for _, gate := range gs {
		h, err := tip.History(ctx, gate.Cluster)
		if err != nil {
			return err
		}
		g.Histories[gate.Cluster] = h
	}
	if err := readHealth(tip, g); err != nil {
		return err
	}
	up, err := gitops.ReadState(cat, gs[0].Cluster)
	if err != nil {
		return inputErr(err)
	}
	due, waits := g.Pending(up.Artifacts, mine, now)
	for _, a := range due {
		for _, v := range a.Versions {
			l.AddWaiting(c, a.Name, v.Version, rollout.Wait{})
		}
	}
	for _, w := range waits {
		l.AddWaiting(c, w.Artifact, w.Version, w)
	}
	return nil
}
