package pipeline

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/rollout"
)

// recordHealth commits, at the time at, cluster's health record of tiny
// v (the bundle digest cluster's state records) as publish status
// --record writes it (status.Record, against the real kube-apiserver in
// test/e2e TestStatusRecord).
func (f *rolloutFixture) recordHealth(t *testing.T, at time.Time, cluster, v string, h rollout.Health, reason string) {
	t.Helper()
	ctx := context.Background()
	o := catalogOpts(f.catalog)
	tip, err := catalog.OpenTip(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer tip.Close()
	file := &rollout.HealthFile{Cluster: cluster}
	if data, ok, err := tip.ReadFile(rollout.HealthPath(cluster)); err != nil {
		t.Fatal(err)
	} else if ok {
		if file, err = rollout.ParseHealth(rollout.HealthPath(cluster), data); err != nil {
			t.Fatal(err)
		}
	}
	file.Merge([]rollout.HealthRecord{{Artifact: "tiny", Version: v, BundleDigest: f.digestOf(t, cluster, v), Health: h, Reason: reason,
		Source: "Subscription operators/tiny, CSV tiny.v" + v, Time: at}}, nil)
	data, err := file.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	w, err := tip.Commit([]catalog.Change{{Path: rollout.HealthPath(cluster), Data: data}}, catalog.CommitOptionsFor(o, "health: record", at))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tip.Push(ctx, w); err != nil {
		t.Fatal(err)
	}
}

// TestRolloutHealthGate: prod waits 2h after staging with healthy: true.
// tiny 1.2.0 recorded Failed on staging is held from prod after the soak,
// the reason in the run's wait and in prod's plan; recorded Healthy, the
// next run lists it on prod. A version recorded Healthy at once still
// waits for the soak.
func TestRolloutHealthGate(t *testing.T) {
	f := newRollout(t)
	t0 := f.now
	f.runAt(t, t0.Add(-24*time.Hour), "1.1.0")
	f.gates, f.healthy = true, true
	f.addVersion(t, "1.2.0")
	f.runAt(t, t0, "1.2.0")
	if _, on := f.runAt(t, t0.Add(time.Hour), "1.2.0"); on != "lab staging" {
		t.Fatalf("at t0+1h: tiny 1.2.0 on %q", on)
	}
	// No record yet: held, saying how to make one.
	res, on := f.runAt(t, t0.Add(3*time.Hour), "1.2.0")
	if w := waitOf(res, "prod", "1.2.0"); on != "lab staging" || !strings.Contains(w, "no health record of 1.2.0 on staging: run publish status --record") {
		t.Fatalf("at t0+3h without a record: on %q, prod waits %q", on, w)
	}
	f.recordHealth(t, t0.Add(3*time.Hour+5*time.Minute), "staging", "1.2.0", rollout.Failed, "phase Failed: InstallComponentFailed: install strategy failed: deployment tiny-controller not ready")
	res, on = f.runAt(t, t0.Add(3*time.Hour+10*time.Minute), "1.2.0")
	want := "held: recorded Failed on staging at 2026-12-01T11:05Z (Subscription operators/tiny, CSV tiny.v1.2.0): phase Failed: InstallComponentFailed"
	if w := waitOf(res, "prod", "1.2.0"); on != "lab staging" || !strings.Contains(w, want) {
		t.Fatalf("at t0+3h10m, recorded Failed: on %q, prod waits %q", on, w)
	}
	plans := f.planAt(t, t0.Add(3*time.Hour+10*time.Minute))
	if md := plans[2].Markdown(); !strings.Contains(md, "| `tiny` | 1.2.0 | staging | when recorded healthy there | "+want) {
		t.Errorf("prod's plan does not say why 1.2.0 is held:\n%s", md)
	}
	l, err := ListGated(context.Background(), catalogOpts(f.catalog), []string{"prod"}, map[string][]rollout.Gate{"prod": {{Cluster: "staging", Soak: 2 * time.Hour, Healthy: true}}}, t0.Add(3*time.Hour+10*time.Minute))
	if err != nil || !strings.Contains(l.Table(), "held: failed on staging") {
		t.Errorf("publish list --cluster prod does not show 1.2.0 held (%v):\n%s", err, l.Table())
	}
	f.recordHealth(t, t0.Add(4*time.Hour), "staging", "1.2.0", rollout.Healthy, "phase Succeeded: InstallSucceeded")
	if _, on = f.runAt(t, t0.Add(4*time.Hour+5*time.Minute), "1.2.0"); on != "lab staging prod" {
		t.Fatalf("recorded Healthy: tiny 1.2.0 on %q, want every cluster", on)
	}

	// Healthy at once: prod still waits for the soak.
	t1 := t0.Add(24 * time.Hour)
	f.addVersion(t, "1.3.0")
	f.runAt(t, t1, "1.3.0")
	f.runAt(t, t1.Add(time.Hour), "1.3.0")
	f.recordHealth(t, t1.Add(time.Hour+5*time.Minute), "staging", "1.3.0", rollout.Healthy, "phase Succeeded")
	res, on = f.runAt(t, t1.Add(2*time.Hour), "1.3.0")
	if w := waitOf(res, "prod", "1.3.0"); on != "lab staging" || !strings.Contains(w, "soaking 2h0m0s: 1h0m0s left") || strings.Contains(w, "health") {
		t.Fatalf("at t1+2h, healthy, not soaked: on %q, prod waits %q", on, w)
	}
	if _, on = f.runAt(t, t1.Add(3*time.Hour), "1.3.0"); on != "lab staging prod" {
		t.Fatalf("at t1+3h: tiny 1.3.0 on %q, want every cluster", on)
	}
}
