package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/operator-publish/publish/internal/delivery"
	"github.com/operator-publish/publish/internal/report"
	"github.com/operator-publish/publish/internal/rollout"
)

// TestRolloutPullRequestGitea: lab → staging (soak 1h) → prod (soak 2h
// after staging, healthy: true), prod delivered by pull request on a real
// Gitea server, the runs at an injected clock (the catalog commits carry
// its time, which the gates read back from the catalog history; no
// sleeps). While tiny 1.2.0 soaks on staging, prod's run and plan say it
// waits, from when staging's catalog commit listed it and with the time
// left; once it has soaked and staging's health record says Healthy, a
// run without any package-repo change reads it again (a pending gate) and
// opens prod's pull request, whose body gives the gate evidence: the
// catalog commit and time that listed it on staging, and staging's health
// record (health, when recorded, the object read, the bundle).
func TestRolloutPullRequestGitea(t *testing.T) {
	f := &rolloutFixture{fixture: newFixture(t), now: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}
	gc := newGiteaCatalog(t, f.fixture, "lab", "staging", "prod")
	t0 := f.now
	runAt := func(at time.Time, what string) *Result {
		t.Helper()
		f.now = at
		o := f.options(&gc.log)
		gc.wire(&o)
		if f.gates {
			o.Clusters[2].Delivery = DeliveryPullRequest
		}
		return gc.run(t, o, what)
	}
	prodPR := func(res *Result) *delivery.Result {
		for _, cr := range res.Clusters {
			if cr.Name == "prod" {
				return cr.PullRequest
			}
		}
		return nil
	}
	runAt(t0.Add(-24*time.Hour), "tiny 1.1.0 everywhere, by push")
	f.gates, f.healthy = true, true
	f.addVersion(t, "1.2.0")
	runAt(t0, "tiny 1.2.0 on lab")
	onStaging := runAt(t0.Add(time.Hour), "tiny 1.2.0 on staging after its soak on lab").Commit
	if onStaging == "" || !strings.Contains(f.catalogFile(t, "publish/state/staging.yaml"), "version: 1.2.0") {
		t.Fatalf("staging did not list tiny 1.2.0 an hour after lab (commit %q):\n%s", onStaging, gc.log.String())
	}

	// Soaking on staging: the run and prod's plan say since when (the
	// catalog commit's time) and how long is left.
	at := t0.Add(90 * time.Minute)
	res := runAt(at, "soaking on staging")
	soaking := "listed on staging since 2026-12-01T09:00Z, soaking 2h0m0s: 1h30m0s left (until 2026-12-01T11:00Z)"
	if w := waitOf(res, "prod", "1.2.0"); res.Commit != "" || !strings.Contains(w, soaking) || !strings.Contains(w, "no health record of 1.2.0 on staging") {
		t.Fatalf("at t0+1h30m: commit %q, prod waits %q", res.Commit, w)
	}
	if pr := prodPR(res); pr == nil || pr.Number != 0 {
		t.Fatalf("a pull request for prod while tiny 1.2.0 waits: %+v", pr)
	}
	var prod *report.Plan
	for _, p := range f.planAt(t, at) {
		if p.Cluster == "prod" {
			prod = p
		}
	}
	if md := prod.Markdown(); !strings.Contains(md, "| `tiny` | 1.2.0 | staging |") || !strings.Contains(md, soaking) {
		t.Errorf("prod's plan does not show tiny 1.2.0 soaking on staging:\n%s", md)
	}

	// Soaked and recorded Healthy: a run with no package-repo change
	// proposes it to prod, with the evidence in the body.
	f.recordHealth(t, t0.Add(105*time.Minute), "staging", "1.2.0", rollout.Healthy, "phase Succeeded: InstallSucceeded")
	res = runAt(t0.Add(3*time.Hour), "soaked and healthy")
	pr := prodPR(res)
	if pr == nil || pr.Action != "opened" || !strings.Contains(gc.log.String(), "gates: tiny 1.2.0 passed its gates on cluster prod: read again from") {
		t.Fatalf("after the soak: prod %+v\n%s", pr, gc.log.String())
	}
	body := gc.pr(t, pr.Number).Body
	for _, want := range []string{
		"### Gate evidence",
		"- staging listed tiny 1.2.0 at 2026-12-01T09:00Z (catalog commit " + onStaging[:12] + "), soak 2h0m0s",
		"- staging recorded tiny 1.2.0 Healthy at 2026-12-01T09:45Z (Subscription operators/tiny, CSV tiny.v1.2.0, bundle " + f.digestOf(t, "staging", "1.2.0")[:19] + "): phase Succeeded: InstallSucceeded",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("prod's pull request body lacks %q:\n%s", want, body)
		}
	}
	if s := f.catalogFile(t, "publish/state/prod.yaml"); strings.Contains(s, "version: 1.2.0") {
		t.Errorf("prod lists tiny 1.2.0 on main before its pull request was merged:\n%s", s)
	}
}
