package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/operator-publish/publish/internal/catalog"
	"github.com/operator-publish/publish/internal/model"
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// ev is an event of etcd <version> on cluster at t0 plus h hours.
func ev(cluster, version string, present bool, digest string, h float64) catalog.VersionEvent {
	return catalog.VersionEvent{Cluster: cluster, Artifact: "etcd", Version: version, Present: present, BundleDigest: digest,
		Time: t0.Add(time.Duration(h * float64(time.Hour)))}
}

// TestCheck: the judgement of a version's gates, one rule per row.
func TestCheck(t *testing.T) {
	lab := catalog.NewHistory("lab",
		ev("lab", "1.0.0", true, "sha256:a", 0),
		ev("lab", "1.1.0", true, "sha256:b", 0), ev("lab", "1.1.0", false, "sha256:b", 1), ev("lab", "1.1.0", true, "sha256:b", 2),
		ev("lab", "1.2.0", true, "sha256:c", 0), ev("lab", "1.2.0", true, "sha256:d", 3))
	staging := catalog.NewHistory("staging", ev("staging", "1.0.0", true, "sha256:a", 5))
	one := &Gates{Cluster: "prod", Gates: []Gate{{Cluster: "lab", Soak: 4 * time.Hour}}, Histories: map[string]*catalog.History{"lab": lab}}
	two := &Gates{Cluster: "prod", Gates: []Gate{{Cluster: "lab", Soak: 4 * time.Hour}, {Cluster: "staging", Soak: time.Hour}},
		Histories: map[string]*catalog.History{"lab": lab, "staging": staging}}
	for _, tc := range []struct {
		name            string
		g               *Gates
		version, digest string
		at              float64 // hours after t0
		want            string  // "" passes; else a part of the reason
		upstream        string
		until           float64
	}{
		{"soaked", one, "1.0.0", "sha256:a", 4, "", "", 0},
		{"soaking", one, "1.0.0", "sha256:a", 3.5, "listed on lab since 2026-12-01T08:00Z, soaking 4h0m0s: 30m0s left", "lab", 4},
		{"digest not known yet", one, "1.0.0", "", 4, "", "", 0},
		{"not listed", one, "2.0.0", "sha256:z", 100, "not listed on lab", "lab", -1},
		{"delisted then relisted: from the relisting", one, "1.1.0", "sha256:b", 5, "since 2026-12-01T10:00Z", "lab", 6},
		{"another digest upstream", one, "1.2.0", "sha256:c", 10, "lab lists bundle sha256:d, not sha256:c", "lab", -1},
		{"new digest: from its listing", one, "1.2.0", "sha256:d", 6, "since 2026-12-01T11:00Z", "lab", 7},
		{"every gate passes", two, "1.0.0", "sha256:a", 6, "", "", 0},
		{"the later soak holds", two, "1.0.0", "sha256:a", 5.5, "listed on staging since", "staging", 6},
		{"not listed beats soaking", two, "1.1.0", "sha256:b", 3, "not listed on staging", "staging", -1},
	} {
		w := tc.g.Check("etcd", tc.version, tc.digest, t0.Add(time.Duration(tc.at*float64(time.Hour))))
		switch {
		case tc.want == "" && w != nil:
			t.Errorf("%s: waits: %s", tc.name, w.Reason)
		case tc.want == "":
		case w == nil:
			t.Errorf("%s: passes, want a wait saying %q", tc.name, tc.want)
		case !strings.Contains(w.Reason, tc.want) || w.Upstream != tc.upstream:
			t.Errorf("%s: %s (upstream %s), want %q (upstream %s)", tc.name, w.Reason, w.Upstream, tc.want, tc.upstream)
		case tc.until < 0 && !w.Until.IsZero(), tc.until >= 0 && !w.Until.Equal(t0.Add(time.Duration(tc.until*float64(time.Hour)))):
			t.Errorf("%s: until %v, want t0+%vh", tc.name, w.Until, tc.until)
		}
	}
}

// TestHold: a new version that waits leaves the records, a new digest
// that waits keeps the published record, a listed version passes, an
// artifact left without versions leaves; Pending finds what passed.
func TestHold(t *testing.T) {
	lab := catalog.NewHistory("lab", ev("lab", "1.0.0", true, "sha256:a", 0), ev("lab", "1.1.0", true, "sha256:b", 0), ev("lab", "1.1.0", true, "sha256:c", 3))
	g := &Gates{Cluster: "prod", Gates: []Gate{{Cluster: "lab", Soak: 2 * time.Hour}}, Histories: map[string]*catalog.History{"lab": lab}}
	rec := func(digests ...string) []model.ArtifactRecord {
		a := model.ArtifactRecord{Name: "etcd", Present: true}
		for i, d := range digests {
			v := []string{"1.0.0", "1.1.0", "1.2.0"}[i]
			if d != "" {
				a.Versions = append(a.Versions, model.VersionRecord{Version: v, Tag: "v" + v, Present: true, BundleDigest: d})
			}
		}
		return []model.ArtifactRecord{a}
	}
	previous := rec("sha256:a", "sha256:b")
	current := rec("sha256:a", "sha256:c", "sha256:e")
	out, waits := g.Hold(current, previous, t0.Add(4*time.Hour))
	if len(out) != 1 || len(out[0].Versions) != 2 || out[0].Versions[1].BundleDigest != "sha256:b" {
		t.Fatalf("held records: %+v", out)
	}
	if len(waits) != 2 || waits[0].Version != "1.1.0" || waits[1].Version != "1.2.0" {
		t.Fatalf("waits: %+v", waits)
	}
	if out, _ := g.Hold(current, previous, t0.Add(5*time.Hour)); out[0].Versions[1].BundleDigest != "sha256:c" {
		t.Errorf("after the soak the new digest is not taken: %+v", out)
	}
	if out, waits := g.Hold(rec("", "", "sha256:e"), nil, t0); len(out) != 0 || len(waits) != 1 {
		t.Errorf("an artifact whose only version waits: %+v, %+v", out, waits)
	}
	up := rec("sha256:a", "sha256:c")
	if p, w := g.Pending(up, previous, t0.Add(4*time.Hour)); len(p) != 0 || len(w) != 1 {
		t.Errorf("pending before the soak: %+v, waits %+v", p, w)
	}
	if p, _ := g.Pending(up, previous, t0.Add(5*time.Hour)); len(p) != 1 || len(p[0].Versions) != 1 || p[0].Versions[0].Version != "1.1.0" {
		t.Errorf("pending after the soak: %+v", p)
	}
}
