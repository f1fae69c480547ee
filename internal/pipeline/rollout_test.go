package pipeline

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/operator-publish/publish/internal/bundle"
	"github.com/operator-publish/publish/internal/gitops"
	"github.com/operator-publish/publish/internal/mirror"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/rollout"
	"github.com/operator-publish/publish/internal/target"
)

// rollout is a package repo and catalog with three clusters, lab →
// staging (soak 1h) → prod (soak 2h after staging), run with an injected
// clock: the catalog commits carry its time, which the gates read back.
type rolloutFixture struct {
	*fixture
	now   time.Time
	gates bool
	// healthy makes prod's gate on staging also require staging's health
	// record (rollout.Gate.Healthy).
	healthy bool
}

func newRollout(t *testing.T) *rolloutFixture {
	f := &rolloutFixture{fixture: newFixture(t), now: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}
	f.run(t) // seeds the catalog, cluster global
	f.addOverlays(t, "lab", "staging", "prod")
	return f
}

func (f *rolloutFixture) options(log *syncBuffer) Options {
	cls := []ClusterOptions{{Name: "lab"}, {Name: "staging"}, {Name: "prod"}}
	if f.gates {
		cls[1].After = []rollout.Gate{{Cluster: "lab", Soak: time.Hour}}
		cls[2].After = []rollout.Gate{{Cluster: "staging", Soak: 2 * time.Hour, Healthy: f.healthy}}
	}
	return Options{
		Source:   f.source,
		Mirror:   mirror.Options{DstRegistry: f.dst + "/mirror", PlainHTTP: true},
		Catalog:  catalogOpts(f.catalog),
		Log:      slog.New(slog.NewTextHandler(log, nil)),
		Declared: []string{"lab", "staging", "prod"},
		Clusters: cls,
		Now:      func() time.Time { return f.now },
	}
}

// runAt runs every cluster at the time at and returns the result and
// what each cluster lists of tiny version v: "lab staging" and so on.
func (f *rolloutFixture) runAt(t *testing.T, at time.Time, v string) (*Result, string) {
	t.Helper()
	f.now = at
	var log syncBuffer
	res, err := Run(context.Background(), f.options(&log))
	if err != nil {
		t.Fatalf("run at %s: %v\n%s", at, err, log.String())
	}
	if os.Getenv("ROLLOUT_LOG") != "" {
		t.Logf("run at %s:\n%s", at, log.String())
	}
	return res, f.listedOn(t, v)
}

// listedOn names the clusters whose rendered catalog lists tiny v.
func (f *rolloutFixture) listedOn(t *testing.T, v string) string {
	t.Helper()
	got := renderedVersions(t, f.catalog)
	var on []string
	for _, c := range []string{"lab", "staging", "prod"} {
		if got[c+" tiny "+v+" listed"] {
			on = append(on, c)
		}
	}
	return strings.Join(on, " ")
}

// waitOf is the reason cluster c of res gives for tiny v waiting, "" when
// it does not wait.
func waitOf(res *Result, c, v string) string {
	for _, cr := range res.Clusters {
		for _, w := range cr.Waiting {
			if cr.Name == c && w.Artifact == "tiny" && w.Version == v {
				return w.Reason
			}
		}
	}
	return ""
}

// pushBundle pushes tiny's bundle of version v to the source registry as
// tag, its CSV's description ending in note (a bundle with its own
// digest), and points the manifest of v at it by digest (the bundle tag
// stays v<v>) and commits.
func (f *rolloutFixture) pushBundle(t *testing.T, v, tag, note string) {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, "testdata/bundles/tiny/1.0.0", dir, func(s string) string {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "REGISTRY", f.src), "1.0.0", v)
		return strings.ReplaceAll(s, "A tiny operator for tests.", "A tiny operator for tests, "+note+".")
	})
	img, err := bundle.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, f.src+"/tiny/bundle:"+tag), img); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(f.source, "packages/tiny", v, "manifest.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte(strings.Replace(string(data), "/tiny/bundle:v"+v, "/tiny/bundle:v"+v+"@"+d.String(), 1)), 0o644)
	f.commit(t, "tiny "+v+" rebuilt")
}

// TestRolloutGates: lab → staging (soak 1h) → prod (soak 2h). A new
// version lists on lab only, then on staging 1h later, then on prod 2h
// after that, each without any new commit in the package repo; between,
// runs change nothing and say why the version waits, with the time left.
// A delisting on lab resets the wait of staging, as does a new bundle
// digest on lab; a rebuild of a version staging lists waits its soak
// there, staging keeping the published bundle meanwhile.
func TestRolloutGates(t *testing.T) {
	f := newRollout(t)
	t0 := f.now
	if _, on := f.runAt(t, t0.Add(-24*time.Hour), "1.1.0"); on != "lab staging prod" {
		t.Fatalf("without gates, tiny 1.1.0 on %q", on)
	}
	f.gates = true
	f.addVersion(t, "1.2.0")

	res, on := f.runAt(t, t0, "1.2.0")
	if on != "lab" {
		t.Fatalf("at t0: tiny 1.2.0 on %q, want lab only", on)
	}
	if w := waitOf(res, "staging", "1.2.0"); !strings.Contains(w, "not listed on lab") {
		t.Errorf("staging's wait at t0: %q", w)
	}
	for _, c := range res.Clusters {
		if c.Name != "lab" && !c.Changes.Empty() {
			t.Errorf("at t0, cluster %s changes: %+v", c.Name, c.Changes)
		}
	}
	res, on = f.runAt(t, t0.Add(59*time.Minute), "1.2.0")
	if on != "lab" || res.Commit != "" {
		t.Fatalf("at t0+59m: tiny 1.2.0 on %q, commit %q: want lab only, no commit", on, res.Commit)
	}
	if w := waitOf(res, "staging", "1.2.0"); !strings.Contains(w, "listed on lab since 2026-12-01T08:00Z, soaking 1h0m0s: 1m0s left") {
		t.Errorf("staging's wait at t0+59m: %q", w)
	}
	if w := waitOf(res, "prod", "1.2.0"); !strings.Contains(w, "not listed on staging") {
		t.Errorf("prod's wait at t0+59m: %q", w)
	}
	plans := f.planAt(t, t0.Add(59*time.Minute))
	if md := plans[1].Markdown(); !strings.Contains(md, "### Waiting for gates: 1") || !strings.Contains(md, "| `tiny` | 1.2.0 | lab | 2026-12-01T09:00Z |") {
		t.Errorf("staging's plan at t0+59m:\n%s", md)
	}
	if plans[1].Summary.Upgraded != 0 || len(plans[1].Files) != 0 {
		t.Errorf("staging's plan at t0+59m lists what waits:\n%s", plans[1].Markdown())
	}
	if tbl := report.ClusterTable(plans); !strings.Contains(tbl, "| `tiny` | unchanged | 1.1.0 (+1 older); 1.2.0 waiting until 2026-12-01T09:00Z | 1.1.0 (+1 older); 1.2.0 waiting for staging |") {
		t.Errorf("the cluster table at t0+59m:\n%s", tbl)
	}
	l, err := ListGated(context.Background(), catalogOpts(f.catalog), nil, map[string][]rollout.Gate{"staging": {{Cluster: "lab", Soak: time.Hour}}}, t0.Add(59*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if tbl := l.Table(); !strings.Contains(tbl, "waiting until 2026-12-01T09:00Z") {
		t.Errorf("publish list does not show staging waiting:\n%s", tbl)
	}
	if l, err = ListGated(context.Background(), catalogOpts(f.catalog), []string{"staging"}, map[string][]rollout.Gate{"staging": {{Cluster: "lab", Soak: time.Hour}}}, t0.Add(time.Hour)); err != nil || !strings.Contains(l.Table(), "1.2.0    due") {
		t.Errorf("publish list --cluster staging at t0+1h does not show 1.2.0 due (%v):\n%s", err, l.Table())
	}

	if _, on = f.runAt(t, t0.Add(time.Hour), "1.2.0"); on != "lab staging" {
		t.Fatalf("at t0+1h: tiny 1.2.0 on %q, want lab staging", on)
	}
	if _, on = f.runAt(t, t0.Add(2*time.Hour+59*time.Minute), "1.2.0"); on != "lab staging" {
		t.Fatalf("at t0+2h59m: tiny 1.2.0 on %q, want lab staging", on)
	}
	if _, on = f.runAt(t, t0.Add(3*time.Hour), "1.2.0"); on != "lab staging prod" {
		t.Fatalf("at t0+3h: tiny 1.2.0 on %q, want every cluster", on)
	}

	// A delisting on lab resets staging's wait: 1.3.0 listed on lab at
	// t1, delisted there at t1+30m (lab's selection leaves tiny out),
	// listed again at t1+45m: staging lists it at t1+1h45m, not t1+1h.
	t1 := t0.Add(24 * time.Hour)
	f.addVersion(t, "1.3.0")
	if _, on = f.runAt(t, t1, "1.3.0"); on != "lab" {
		t.Fatalf("at t1: tiny 1.3.0 on %q", on)
	}
	f.now = t1.Add(30 * time.Minute)
	var log syncBuffer
	o := f.options(&log)
	o.Clusters[0].Exclude = []string{"tiny"}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatalf("delisting on lab: %v\n%s", err, log.String())
	}
	if on = f.listedOn(t, "1.3.0"); on != "" {
		t.Fatalf("at t1+30m, lab delisted tiny: 1.3.0 on %q", on)
	}
	if _, on = f.runAt(t, t1.Add(45*time.Minute), "1.3.0"); on != "lab" {
		t.Fatalf("at t1+45m: tiny 1.3.0 on %q", on)
	}
	res, on = f.runAt(t, t1.Add(time.Hour+30*time.Minute), "1.3.0")
	if on != "lab" || !strings.Contains(waitOf(res, "staging", "1.3.0"), "since 2026-12-02T08:45Z") {
		t.Fatalf("at t1+1h30m: tiny 1.3.0 on %q (staging: %q): the delisting must reset the soak", on, waitOf(res, "staging", "1.3.0"))
	}
	if _, on = f.runAt(t, t1.Add(time.Hour+45*time.Minute), "1.3.0"); on != "lab staging" {
		t.Fatalf("at t1+1h45m: tiny 1.3.0 on %q", on)
	}
	// A rebuild of 1.3.0, listed on staging, at t1+2h: staging keeps the
	// published bundle until the rebuild has soaked on lab an hour, then
	// a run without a package-repo change takes it.
	listed := f.digestOf(t, "staging", "1.3.0")
	f.pushBundle(t, "1.3.0", "v1.3.0-r2", "rebuilt")
	f.runAt(t, t1.Add(2*time.Hour), "1.3.0")
	rebuilt := f.digestOf(t, "lab", "1.3.0")
	if rebuilt == listed || f.digestOf(t, "staging", "1.3.0") != listed {
		t.Fatalf("at t1+2h: lab has %s, staging %s; want the rebuild on lab only", rebuilt, f.digestOf(t, "staging", "1.3.0"))
	}
	res, _ = f.runAt(t, t1.Add(2*time.Hour+59*time.Minute), "1.3.0")
	if f.digestOf(t, "staging", "1.3.0") != listed || !strings.Contains(waitOf(res, "staging", "1.3.0"), "since 2026-12-02T10:00Z") {
		t.Fatalf("at t1+2h59m: staging has %s (wait %q), want the published bundle", f.digestOf(t, "staging", "1.3.0"), waitOf(res, "staging", "1.3.0"))
	}
	if f.runAt(t, t1.Add(3*time.Hour), "1.3.0"); f.digestOf(t, "staging", "1.3.0") != rebuilt {
		t.Fatalf("at t1+3h: staging has %s, want the rebuild %s", f.digestOf(t, "staging", "1.3.0"), rebuilt)
	}

	// A new bundle digest on lab resets it too: 1.4.0 listed on lab at
	// t2, rebuilt at t2+30m; staging waits for the new bundle's hour.
	t2 := t0.Add(48 * time.Hour)
	f.addVersion(t, "1.4.0")
	if _, on = f.runAt(t, t2, "1.4.0"); on != "lab" {
		t.Fatalf("at t2: tiny 1.4.0 on %q", on)
	}
	f.pushBundle(t, "1.4.0", "v1.4.0-r2", "rebuilt")
	if _, on = f.runAt(t, t2.Add(30*time.Minute), "1.4.0"); on != "lab" {
		t.Fatalf("at t2+30m: tiny 1.4.0 on %q", on)
	}
	res, on = f.runAt(t, t2.Add(time.Hour), "1.4.0")
	if on != "lab" || !strings.Contains(waitOf(res, "staging", "1.4.0"), "since 2026-12-03T08:30Z") {
		t.Fatalf("at t2+1h: tiny 1.4.0 on %q (staging: %q): the new bundle must reset the soak", on, waitOf(res, "staging", "1.4.0"))
	}
	if _, on = f.runAt(t, t2.Add(90*time.Minute), "1.4.0"); on != "lab staging" {
		t.Fatalf("at t2+1h30m: tiny 1.4.0 on %q", on)
	}
}

// planAt plans every cluster at the time at.
func (f *rolloutFixture) planAt(t *testing.T, at time.Time) []*report.Plan {
	t.Helper()
	f.now = at
	var log syncBuffer
	plans, err := PlanClusters(context.Background(), PlanOptions{Options: f.options(&log)})
	if err != nil {
		t.Fatalf("plan at %s: %v\n%s", at, err, log.String())
	}
	return plans
}

// TestRolloutGatesOLM: on an upstream-OLM cluster edge gated after lab
// (soak 1h), a rebuilt bundle of a listed version (same version, new
// digest) keeps the catalog image's entry of the published bundle, image
// and CSV alike, until it has soaked on lab; then the new bundle takes its
// place.
func TestRolloutGatesOLM(t *testing.T) {
	f := &rolloutFixture{fixture: newFixture(t), now: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}
	pushRandom(t, f.src+"/operator-framework/opm:v1.60.0")
	f.run(t)
	f.addOverlays(t, "lab", "edge")
	run := func(at time.Time, gated bool) {
		t.Helper()
		f.now = at
		var log syncBuffer
		o := f.options(&log)
		o.Declared = []string{"lab", "edge"}
		o.Clusters = []ClusterOptions{{Name: "lab"}, {Name: "edge", Target: target.OLM, TargetSettings: target.OLMOptions{BaseImage: f.src + "/operator-framework/opm:v1.60.0"}}}
		if gated {
			o.Clusters[1].After = []rollout.Gate{{Cluster: "lab", Soak: time.Hour}}
		}
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatalf("run at %s: %v\n%s", at, err, log.String())
		}
	}
	// edgeBundle is the catalog image's olm.bundle of tiny 1.1.0: its
	// image and whether its CSV is the rebuilt one.
	edgeBundle := func() (string, bool) {
		t.Helper()
		_, cfg := f.catalogConfigs(t)
		for _, b := range cfg.Bundles {
			if b.Name == "tiny.v1.1.0" {
				data, _ := json.Marshal(b.Properties)
				return b.Image, strings.Contains(string(data), "rebuilt")
			}
		}
		t.Fatal("the catalog image has no tiny.v1.1.0")
		return "", false
	}
	run(f.now.Add(-24*time.Hour), false)
	before, rebuilt := edgeBundle()
	if rebuilt {
		t.Fatal("the first catalog image has the rebuilt CSV")
	}
	f.pushBundle(t, "1.1.0", "v1.1.0-r2", "rebuilt")
	run(f.now, true)
	if img, rebuilt := edgeBundle(); img != before || rebuilt {
		t.Errorf("while the rebuild soaks on lab, edge's catalog has %s (rebuilt CSV %v), want the published %s and its CSV", img, rebuilt, before)
	}
	run(f.now.Add(time.Hour), true)
	if img, rebuilt := edgeBundle(); img == before || !rebuilt {
		t.Errorf("after the soak, edge's catalog has %s (rebuilt CSV %v), want the rebuilt bundle", img, rebuilt)
	}
}

// digestOf is the bundle digest the state of cluster records for tiny v
// at the catalog's tip ("" when it has none).
func (f *rolloutFixture) digestOf(t *testing.T, cluster, v string) string {
	t.Helper()
	st, err := gitops.ParseState(gitops.StatePath(cluster), []byte(f.catalogFile(t, gitops.StatePath(cluster))))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range st.Artifacts {
		for _, r := range a.Versions {
			if a.Name == "tiny" && r.Version == v {
				return r.BundleDigest
			}
		}
	}
	return ""
}
