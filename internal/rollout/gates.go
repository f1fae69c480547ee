// Package rollout judges the gates between clusters (publish.yaml
// clusters.<name>.after, docs/rollout.md): a version lists on a cluster
// only once it has been listed, with the same bundle digest, on every
// upstream cluster for that gate's soak time, as the catalog repo's own
// history dates it (catalog.History: the committer time of the catalog
// commit that listed it there).
package rollout

import (
	"fmt"
	"strings"
	"time"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/model"
)

// Gate is one upstream cluster a cluster's new listings wait for.
type Gate struct {
	// Cluster is the upstream cluster.
	Cluster string
	// Soak is how long the version must have been listed there (0: listed
	// there is enough).
	Soak time.Duration
	// Healthy also requires Cluster's health record (HealthFile, from
	// publish status --record) to say the version, with the same bundle
	// digest, is Healthy there.
	Healthy bool
}

// Wait is why a version is not listed on a cluster yet: the gates it has
// not passed.
type Wait struct {
	// Cluster is the cluster that waits (in a plan, the plan's).
	Cluster string `json:"-"`
	// Artifact and Version are the version that waits.
	Artifact string `json:"artifact"`
	Version  string `json:"version"`
	// Upstream is the gate that holds it longest: a cluster that does not
	// list it (Listed zero), else the one whose soak ends last.
	Upstream string `json:"upstream"`
	// Listed is when Upstream listed the version with the bundle digest
	// that waits (zero: it does not list it); Until is Listed plus the
	// gate's soak, when the version may list (zero with Listed).
	Listed time.Time `json:"listedUpstream,omitzero"`
	Until  time.Time `json:"until,omitzero"`
	// Health is set when a gate with healthy: true holds the version
	// (Upstream's health record: Failed, Progressing, or "none" when there
	// is no record for this version and bundle): no time alone lets it
	// through.
	Health Health `json:"health,omitempty"`
	// Reason says, for people, every gate not passed, "; "-separated.
	Reason string `json:"reason"`
}

// Left is the time left at now until w's soak ends (0 when it has ended
// or the version is not listed upstream, which no time alone passes).
func (w Wait) Left(now time.Time) time.Duration {
	if w.Until.IsZero() || !now.Before(w.Until) {
		return 0
	}
	return w.Until.Sub(now)
}

// Gates are the gates of one cluster with the catalog history of each
// upstream cluster, read from the catalog branch tip the run or plan
// reads.
type Gates struct {
	Cluster string
	Gates   []Gate
	// Histories are the upstream clusters' catalog histories, by cluster.
	Histories map[string]*catalog.History
	// Health are the upstream clusters' health records (HealthPath), by
	// cluster, for the gates with Healthy; a missing one holds every
	// version.
	Health map[string]*HealthFile
}

// Check judges the gates for one version whose record on the cluster
// would have bundle digest digest ("" when not known yet: a plan, before
// the mirror, compares no digest), at the time now. It returns nil when
// every gate passes: each upstream cluster lists the version, with that
// digest, since at least its soak time before now (the last event of the
// version in that cluster's history: a delisting, a relisting or a new
// digest there restarts the soak), and, for a gate with Healthy, each
// such cluster's health record says the version is Healthy (a version
// recorded Failed or Progressing, or not recorded, is held). Otherwise
// the Wait says why.
func (g *Gates) Check(artifact, version, digest string, now time.Time) *Wait {
	var w *Wait
	var reasons []string
	hold := func(up string, listed, until time.Time, reason string) {
		reasons = append(reasons, reason)
		if w == nil || (!w.Listed.IsZero() && (listed.IsZero() || until.After(w.Until))) {
			w = &Wait{Cluster: g.Cluster, Artifact: artifact, Version: version, Upstream: up, Listed: listed, Until: until}
		}
	}
	for _, gate := range g.Gates {
		var e catalog.VersionEvent
		ok := false
		if h := g.Histories[gate.Cluster]; h != nil {
			e, ok = h.Since(artifact, version)
		}
		switch {
		case !ok || !e.Present:
			hold(gate.Cluster, time.Time{}, time.Time{}, "not listed on "+gate.Cluster)
		case digest != "" && e.BundleDigest != "" && e.BundleDigest != digest:
			hold(gate.Cluster, time.Time{}, time.Time{}, fmt.Sprintf("%s lists bundle %s, not %s: the soak starts when %s lists this bundle", gate.Cluster, short(e.BundleDigest), short(digest), gate.Cluster))
		case now.Before(e.Time.Add(gate.Soak)):
			until := e.Time.Add(gate.Soak)
			hold(gate.Cluster, e.Time, until, fmt.Sprintf("listed on %s since %s, soaking %s: %s left (until %s)",
				gate.Cluster, stamp(e.Time), gate.Soak, until.Sub(now).Round(time.Minute), stamp(until)))
		}
		if gate.Healthy && ok && e.Present {
			if why := checkHealth(gate.Cluster, g.Health[gate.Cluster], artifact, version, digest); why != "" {
				hold(gate.Cluster, time.Time{}, time.Time{}, why)
				if w.Upstream == gate.Cluster && w.Listed.IsZero() && w.Health == "" {
					w.Health = recordHealth(g.Health[gate.Cluster], artifact, version, digest)
				}
			}
		}
	}
	if w != nil {
		w.Reason = strings.Join(reasons, "; ")
	}
	return w
}

// Hold applies the gates to current, the records of the versions the
// cluster's selection takes, given previous, the cluster's published
// records, at now. A version the cluster lists already with the same
// bundle digest (or a digest not known yet) passes; one it does not list,
// or lists with another digest, must pass Check: else it is left out of
// the records (a new version) or keeps its published record (a new
// digest), and its Wait is returned. An artifact left with no version is
// left out. current is not changed; the result is sorted as current is.
func (g *Gates) Hold(current, previous []model.ArtifactRecord, now time.Time) ([]model.ArtifactRecord, []Wait) {
	if g == nil || len(g.Gates) == 0 {
		return current, nil
	}
	listed := map[[2]string]model.VersionRecord{}
	for _, a := range previous {
		for _, v := range a.Versions {
			if a.Present && v.Present {
				listed[[2]string{a.Name, v.Tag}] = v
			}
		}
	}
	var out []model.ArtifactRecord
	var waits []Wait
	for _, a := range current {
		kept := a
		kept.Versions = nil
		for _, v := range a.Versions {
			old, had := listed[[2]string{a.Name, v.Tag}]
			if had && (v.BundleDigest == "" || v.BundleDigest == old.BundleDigest) {
				kept.Versions = append(kept.Versions, v)
				continue
			}
			w := g.Check(a.Name, v.Version, v.BundleDigest, now)
			if w == nil {
				kept.Versions = append(kept.Versions, v)
				continue
			}
			waits = append(waits, *w)
			if had {
				kept.Versions = append(kept.Versions, old)
			}
		}
		if len(kept.Versions) > 0 {
			out = append(out, kept)
		}
	}
	return out, waits
}

// Pending returns the versions that upstream lists (its records, from
// its state at the catalog tip) and the cluster does not list with the
// same bundle digest (previous, its records), whose gates pass at now:
// what a run lists without any change in the package repo. Each is the
// upstream record, whose Path names its manifest in the package repo.
// The other such versions wait: their Waits are returned too.
func (g *Gates) Pending(upstream, previous []model.ArtifactRecord, now time.Time) ([]model.ArtifactRecord, []Wait) {
	if g == nil || len(g.Gates) == 0 {
		return nil, nil
	}
	listed := map[[2]string]string{}
	for _, a := range previous {
		for _, v := range a.Versions {
			if a.Present && v.Present {
				listed[[2]string{a.Name, v.Tag}] = v.BundleDigest
			}
		}
	}
	var out []model.ArtifactRecord
	var waits []Wait
	for _, a := range upstream {
		if !a.Present {
			continue
		}
		p := a
		p.Versions = nil
		for _, v := range a.Versions {
			d, had := listed[[2]string{a.Name, v.Tag}]
			if !v.Present || had && d == v.BundleDigest {
				continue
			}
			if w := g.Check(a.Name, v.Version, v.BundleDigest, now); w != nil {
				waits = append(waits, *w)
			} else {
				p.Versions = append(p.Versions, v)
			}
		}
		if len(p.Versions) > 0 {
			out = append(out, p)
		}
	}
	return out, waits
}

// short is a digest cut to its algorithm and 12 hex digits.
func short(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}

// stamp is t in UTC, RFC 3339 to the minute.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04Z") }

// Evidence returns, for a version the cluster lists, one line per gate of
// when each upstream cluster listed it (the catalog commit and its time,
// from the catalog history), for a pull request's reviewers:
// "lab listed tiny 1.2.0 at 2026-12-04T10:00Z (catalog commit 1a2b3c4d5e6f), soak 1h".
// An upstream cluster that does not list it says so. A gate with Healthy
// adds the line of the upstream cluster's health record of the version
// (healthEvidence).
func (g *Gates) Evidence(artifact, version string) []string {
	var out []string
	for _, gate := range g.Gates {
		var e catalog.VersionEvent
		ok := false
		if h := g.Histories[gate.Cluster]; h != nil {
			e, ok = h.Since(artifact, version)
		}
		if !ok || !e.Present {
			out = append(out, fmt.Sprintf("%s does not list %s %s", gate.Cluster, artifact, version))
			continue
		}
		out = append(out, fmt.Sprintf("%s listed %s %s at %s (catalog commit %s), soak %s", gate.Cluster, artifact, version, stamp(e.Time), e.Commit[:min(12, len(e.Commit))], gate.Soak))
		if gate.Healthy {
			out = append(out, healthEvidence(gate.Cluster, g.Health[gate.Cluster], artifact, version))
		}
	}
	return out
}
