package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/model"
	"github.com/operator-publish/publish/internal/rollout"
)

// gated reports whether a cluster of o has gates (ClusterOptions.After):
// then the catalog tip is opened with its whole history
// (gitops.Options.History), which dates the upstream listings.
func (o *Options) gated() bool {
	for _, c := range o.clusterList() {
		if len(c.After) > 0 {
			return true
		}
	}
	return len(o.cluster.After) > 0
}

// gateSet is what the scope of a cluster with gates reads of the catalog
// tip: the gates with the upstream clusters' histories, the records of
// the first upstream cluster (the versions that may be pending), and the
// run's time, taken once so that every judgement of the run agrees.
type gateSet struct {
	gates    *rollout.Gates
	upstream []model.ArtifactRecord
	now      time.Time
	// waiting are the versions that wait as the catalog alone says
	// (markPending: rollout.Gates.Pending; the incremental way reads no
	// manifest of theirs): reported with those the records hold back.
	waiting []rollout.Wait
}

// openGates reads the gates of the scope's cluster from its tip: each
// upstream cluster's catalog history (catalog.Tip.History) and the first
// upstream cluster's state. Nil for a cluster without gates. A history cut
// short (a catalog fetched without History) is said in the log: a listing
// older than its oldest commit is dated by that commit. Errors: a state
// file or history that cannot be read.
func openGates(ctx context.Context, o Options, tip *catalog.Tip) (*gateSet, error) {
	after := o.cluster.After
	if len(after) == 0 {
		return nil, nil
	}
	g := &gateSet{gates: &rollout.Gates{Cluster: o.Cluster, Gates: after, Histories: map[string]*catalog.History{}}, now: o.now()}
	for _, gate := range after {
		h, err := tip.History(ctx, gate.Cluster)
		if err != nil {
			return nil, err
		}
		if h.Truncated {
			o.warnf("gates: the catalog history of cluster %s is cut short (%d commits read): a listing older than them counts from the oldest", gate.Cluster, h.Commits)
		}
		g.gates.Histories[gate.Cluster] = h
	}
	if err := readHealth(tip, g.gates); err != nil {
		return nil, err
	}
	p := gitops.StatePath(after[0].Cluster)
	data, ok, err := tip.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if ok {
		st, err := gitops.ParseState(p, data)
		if err != nil {
			return nil, inputErr(err)
		}
		g.upstream = st.Artifacts
	}
	return g, nil
}

// readHealth reads into g.Health the health record (rollout.HealthPath)
// of each upstream cluster of a gate with Healthy, from tip; a cluster
// without one has none (every version it gates is held). Errors: a file
// that cannot be read or parsed (an input error naming it).
func readHealth(tip *catalog.Tip, g *rollout.Gates) error {
	for _, gate := range g.Gates {
		if !gate.Healthy {
			continue
		}
		p := rollout.HealthPath(gate.Cluster)
		data, ok, err := tip.ReadFile(p)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		h, err := rollout.ParseHealth(p, data)
		if err != nil {
			return inputErr(err)
		}
		if g.Health == nil {
			g.Health = map[string]*rollout.HealthFile{}
		}
		g.Health[gate.Cluster] = h
	}
	return nil
}

// pendingPaths returns the manifest paths of the versions whose gates
// passed since the cluster's last publish (rollout.Gates.Pending over the
// cluster's records in idx): the incremental way reads them even when the
// package repo did not change, so that a scheduled run lists them. A
// pending version whose upstream record has no manifest path makes the
// incremental way inapplicable.
func (g *gateSet) pendingPaths(o Options, idx *gitops.StateIndex) ([]string, error) {
	if g == nil {
		return nil, nil
	}
	var prev []model.ArtifactRecord
	for _, a := range g.upstream {
		rec, ok, err := idx.Artifact(a.Name)
		if err != nil {
			return nil, catalog.FullReadRequired("%v", err)
		}
		if ok {
			prev = append(prev, rec)
		}
	}
	var paths []string
	pending, _ := g.gates.Pending(g.upstream, prev, g.now)
	for _, a := range pending {
		for _, v := range a.Versions {
			if v.Path == "" {
				return nil, catalog.FullReadRequired("%s does not record the manifest path of %s %s, whose gates passed", gitops.StatePath(o.cluster.After[0].Cluster), a.Name, v.Version)
			}
			o.logf("gates: %s %s passed its gates on cluster %s: read again from %s", a.Name, v.Version, o.Cluster, v.Path)
			paths = append(paths, v.Path)
		}
	}
	return paths, nil
}

// markPending marks Changed the versions of vs whose gates passed since
// the cluster's last publish (rollout.Gates.Pending over previous, the
// cluster's records), so that they are read and their records made anew
// on either way (a rebuilt bundle the state knows by its old digest
// included); it keeps the versions that wait, as the catalog says, for
// hold.
func (g *gateSet) markPending(vs []*model.Version, previous []model.ArtifactRecord) {
	if g == nil {
		return
	}
	due, waiting := g.gates.Pending(g.upstream, previous, g.now)
	g.waiting = waiting
	keys := map[model.Key]bool{}
	for _, a := range due {
		for _, v := range a.Versions {
			keys[model.Key{Artifact: a.Name, Version: v.Version}] = true
		}
	}
	for _, v := range vs {
		if keys[v.Key()] {
			v.Changed = true
		}
	}
}

// hold is rollout.Gates.Hold of current over previous at the gates' time,
// with the waits the catalog alone gave (markPending) for the versions
// Hold does not hold (not read: a rebuild upstream that has not soaked);
// current as it is without gates.
func (g *gateSet) hold(current, previous []model.ArtifactRecord) ([]model.ArtifactRecord, []rollout.Wait) {
	if g == nil {
		return current, nil
	}
	out, waits := g.gates.Hold(current, previous, g.now)
	held := map[model.Key]bool{}
	for _, w := range waits {
		held[model.Key{Artifact: w.Artifact, Version: w.Version}] = true
	}
	for _, w := range g.waiting {
		if !held[model.Key{Artifact: w.Artifact, Version: w.Version}] {
			waits = append(waits, w)
		}
	}
	return out, waits
}

// waitLines are the log lines of waits: "<artifact> <version> waits: why".
func waitLines(ws []rollout.Wait) []string {
	var out []string
	for _, w := range ws {
		out = append(out, fmt.Sprintf("gates: %s %s waits on cluster %s: %s", w.Artifact, w.Version, w.Cluster, w.Reason))
	}
	return out
}

// heldKeys are the versions of ws, for leaving them out of the mirror.
func heldKeys(ws []rollout.Wait) map[model.Key]bool {
	out := map[model.Key]bool{}
	for _, w := range ws {
		out[model.Key{Artifact: w.Artifact, Version: w.Version}] = true
	}
	return out
}
